// `npm run build`: the page as static files in dist/ (index.html, style.css, app.js), with React
// and the AI SDK bundled in, so the page loads nothing from a CDN and needs no Node to serve.
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist");

await mkdir(out, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.jsx")],
  outfile: join(out, "app.js"),
  bundle: true,
  minify: true,
  sourcemap: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
for (const file of ["index.html", "style.css"]) {
  await copyFile(join(here, file), join(out, file));
}
console.log(`built ${out}`);
