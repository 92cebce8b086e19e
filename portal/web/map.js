// A dagger's latest window as cells on a map (the dagger page's #map): its cells from
// /api/daggers/<name>/cells, Natural Earth's land as the basemap, all served by the portal.
// Text from the sink (cell ids, column names) reaches the page as text nodes only.
import L from "leaflet";
import { feature } from "topojson-client";

const REFRESH_MS = 15000;

function text(tag, value, className) {
  const node = document.createElement(tag);
  node.textContent = value;
  if (className) node.className = className;
  return node;
}

function colour(value, low, high) {
  // light yellow to deep red: a sequential scale (ColorBrewer's YlOrRd ends)
  const t = high > low ? (value - low) / (high - low) : 1;
  const from = [255, 237, 160], to = [189, 0, 38];
  const rgb = from.map((c, i) => Math.round(c + (to[i] - c) * t));
  return `rgb(${rgb.join(",")})`;
}

function tooltip(cell) {
  const box = document.createElement("div");
  box.appendChild(text("strong", cell.cell));
  for (const [name, value] of Object.entries(cell.values)) {
    box.appendChild(document.createElement("br"));
    box.appendChild(text("span", `${name} ${value}`));
  }
  return box;
}

async function start(element) {
  const said = document.getElementById("map-said");
  const map = L.map(element, { attributionControl: true, worldCopyJump: true }).setView([0, 0], 2);
  map.attributionControl.setPrefix(false);
  map.attributionControl.addAttribution("Land: Natural Earth (world-atlas)");
  const land = await (await fetch(element.dataset.land, { credentials: "same-origin" })).json();
  L.geoJSON(feature(land, land.objects.land), {
    interactive: false,
    style: { color: "#8a8f98", weight: 1, fillColor: "#eceae4", fillOpacity: 1 },
  }).addTo(map);
  const layer = L.layerGroup().addTo(map);
  let framed = false;

  async function draw() {
    let body;
    try {
      const response = await fetch(element.dataset.cells, { credentials: "same-origin" });
      body = await response.json();
      if (!response.ok) throw new Error(body.error || `the portal answered ${response.status}`);
    } catch (e) {
      said.textContent = `The map cannot be drawn now: ${e.message}`;
      return;
    }
    layer.clearLayers();
    const cells = body.cells || [];
    const measure = cells.length ? Object.keys(cells[0].values)[0] : undefined;
    const values = cells.map((c) => c.values[measure]).filter((v) => typeof v === "number");
    const low = Math.min(...values), high = Math.max(...values);
    const bounds = [];
    for (const cell of cells) {
      const polygon = L.polygon(cell.outline, {
        color: "#444", weight: 1, fillOpacity: 0.75,
        fillColor: measure === undefined ? "#bd0026" : colour(cell.values[measure], low, high),
      });
      polygon.bindTooltip(tooltip(cell), { sticky: true });
      layer.addLayer(polygon);
      bounds.push(...cell.outline);
    }
    if (bounds.length && !framed) {
      map.fitBounds(bounds, { padding: [20, 20], maxZoom: 14 });
      framed = true;
    }
    element.dataset.drawn = String(cells.length);
    element.dataset.window = body.window_ms === null ? "" : String(body.window_ms);
    const when = body.window_ms === null ? "no window yet" : `the window at ${new Date(body.window_ms).toISOString()}`;
    said.textContent = `${cells.length} ${body.kind === "s2" ? "S2 cells" : "geohashes"} by ${body.key}, ${when}` +
      (measure === undefined ? "" : `; colour: ${measure} from ${low} to ${high}`) +
      (body.not_cells ? `; ${body.not_cells} rows whose key is not a cell` : "");
  }

  await draw();
  setInterval(draw, REFRESH_MS);
}

const element = document.getElementById("map");
if (element) start(element);
