// Bundles the map's script and copies what it loads (Leaflet's stylesheet, Natural Earth's land)
// into portal/static/build/, which the portal serves: nothing is fetched from elsewhere at run time.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const out = new URL("../static/build/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ["map.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2019",
  outfile: out + "map.js",
  logLevel: "warning",
});
copyFileSync("node_modules/leaflet/dist/leaflet.css", out + "leaflet.css");
copyFileSync("node_modules/world-atlas/land-10m.json", out + "land-10m.json");
