"""The approval inbox at `/`: the page, its script and its styles, served from the package.

The page is answered with a Content-Security-Policy that lets it load and run only what this
server sends, and lets no other site frame it (a framed inbox could be clicked through by a page
the approver did not mean to act on). That is why its scripts and styles are files of their own.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

CONTENT_SECURITY_POLICY: Final = "default-src 'self'; frame-ancestors 'none'"


def _static(name: str) -> str:
    return (files("turnkeeper.http") / "static" / name).read_text(encoding="utf-8")


async def inbox() -> HTMLResponse:
    """The inbox page."""
    return HTMLResponse(
        _static("inbox.html"), headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY}
    )


async def inbox_script() -> Response:
    """The inbox's script."""
    return Response(_static("inbox.js"), media_type="text/javascript")


async def inbox_views() -> Response:
    """The inbox's views (what a call shows), loaded before its script."""
    return Response(_static("inbox-view.js"), media_type="text/javascript")


async def inbox_styles() -> Response:
    """The inbox's styles."""
    return Response(_static("inbox.css"), media_type="text/css")


def add_inbox(app: FastAPI) -> None:
    """Adds the inbox's routes to `app`, outside its OpenAPI document."""
    routes = (
        ("/", inbox),
        ("/inbox-view.js", inbox_views),
        ("/inbox.js", inbox_script),
        ("/inbox.css", inbox_styles),
    )
    for path, endpoint in routes:
        app.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)
