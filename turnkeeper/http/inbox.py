"""The approval inbox at `/`: the page, its script and its styles, served from the package.

The page is answered with a Content-Security-Policy that lets it load and run only what this
server sends, and lets no other site frame it (a framed inbox could be clicked through by a page
the approver did not mean to act on). That is why its script and styles are files of their own.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

CONTENT_SECURITY_POLICY: Final = "default-src 'self'; frame-ancestors 'none'"

router = APIRouter(include_in_schema=False)


def _static(name: str) -> str:
    return (files("turnkeeper.http") / "static" / name).read_text(encoding="utf-8")


@router.get("/", response_class=HTMLResponse)
async def inbox() -> HTMLResponse:
    """The inbox page."""
    return HTMLResponse(
        _static("inbox.html"), headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY}
    )


@router.get("/inbox.js")
async def inbox_script() -> Response:
    """The inbox's script."""
    return Response(_static("inbox.js"), media_type="text/javascript")


@router.get("/inbox.css")
async def inbox_styles() -> Response:
    """The inbox's styles."""
    return Response(_static("inbox.css"), media_type="text/css")
