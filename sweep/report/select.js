// The report's one callback (a bokeh CustomJS, run when a control changes and once on load):
// it reads the controls, finds the slice of each precomputed block (sweep/report/tables.py)
// that belongs to them, and copies it into the plotted sources. No number is computed here
// beyond that look-up: every value was computed by the analysis layer in Python.
const L = meta.labels;
const pick = (name) => Math.max(0, L[name].indexOf(controls[name].value));
const idx = {
  basis: pick("basis"), engine: pick("engine"), model: pick("model"),
  precision: pick("precision"), context_choice: pick("context_choice"),
  ttft: pick("ttft"), tpot: pick("tpot"),
};
// offset of the run that starts at the given leading indices, in a block of the given dims
function start(dims, upto) {
  let k = 0;
  for (const d of dims.slice(0, upto)) k = k * L[d].length + idx[d];
  let run = 1;
  for (const d of dims.slice(upto)) run *= L[d].length;
  return [k * run, run];
}
const hw = (c) => (c === 255 ? "" : L.hardware[c]);
const lay = (c) => (c === 255 ? "" : L.parallelism[c]);
const fmt = (v) => (Number.isFinite(v) ? Number(v.toPrecision(4)).toLocaleString("en") : "n/a");
const basis = L.basis_label[idx.basis];

// ------------------------------------------------------------------ winner map and variation
{
  const m = blocks.maps.data;
  const [s0, n] = start(meta.shapes.maps, 4);  // basis, engine, model, precision
  const nb = L.batch.length;
  const out = {x: [], y: [], colour: [], hatch: [], winner: [], layout: [], value: [],
               runner: [], margin: [], mtext: [], n: [], why: [], ratio: [], rtext: [],
               top: [], bottom: []};
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const j = s0 + i, w = m.winner[j];
    out.x.push(L.batch[i % nb]);
    out.y.push(L.context[Math.floor(i / nb)]);
    out.colour.push(w === 255 ? meta.none_greys[m.why[j] % meta.none_greys.length]
                              : meta.colours[w]);
    out.hatch.push(w === 255 ? " " : meta.hatches[w]);
    out.winner.push(w === 255 ? "none" : hw(w));
    out.layout.push(lay(m.layout[j]));
    out.value.push(fmt(m.best[j]));
    out.runner.push(hw(m.runner[j]) || "-");
    out.margin.push(Number.isFinite(m.margin[j]) ? m.margin[j].toFixed(2) + "x" : "-");
    out.mtext.push(Number.isFinite(m.margin[j]) ? m.margin[j].toFixed(2) + "x" : "");
    out.n.push(m.n[j] + " of " + L.hardware.length);
    out.why.push(m.why[j] === 255 ? "" : L.why[m.why[j]]);
    const r = m.ratio[j];
    out.ratio.push(Number.isFinite(r) ? r : NaN);
    out.rtext.push(Number.isFinite(r) ? Number(r.toPrecision(3)) + "x" : "");
    out.top.push(hw(m.top[j]) || "-");
    out.bottom.push(hw(m.bottom[j]) || "-");
    if (Number.isFinite(r) && r > 0) { lo = Math.min(lo, r); hi = Math.max(hi, r); }
  }
  maps.data = out;
  if (Number.isFinite(lo)) { ratio_map.low = lo; ratio_map.high = hi > lo ? hi : lo * 1.01; }
  titles.winner.text = "Winner: highest throughput " + basis;
  titles.variation.text = "Variation: best / worst device, throughput " + basis;
  axes.winner_unit.text = "Each device at its best layout; numbers: the winner's margin over " +
    "the runner-up; grey: no device feasible (hover for why). Values in " +
    meta.units["best:" + L.basis[idx.basis]] + ".";
}

// ------------------------------------------------------------------ goodput
if (blocks.goodput) {
  const g = blocks.goodput.data;
  const [s0, n] = start(meta.shapes.goodput, 7);  // ... context_choice; run: hardware
  const rows = [];
  for (let i = 0; i < n; i++) {
    const v = g.value[s0 + i];
    if (Number.isFinite(v)) rows.push([i, v, g.batch[s0 + i], g.layout[s0 + i]]);
  }
  rows.sort((a, b) => b[1] - a[1]);
  const out = {hardware: [], value: [], colour: [], batch: [], layout: [], text: [], base: []};
  const floor = rows.length ? rows[rows.length - 1][1] / 3 : 1;  // bars start below the least
  for (const [i, v, b, l] of rows) {
    out.hardware.push(L.hardware[i]); out.value.push(v); out.colour.push(meta.colours[i]);
    out.batch.push(b === 255 ? "" : L.batch[b]); out.layout.push(lay(l)); out.text.push(fmt(v));
    out.base.push(floor);
  }
  goodput.data = out;
  goodput_range.factors = out.hardware.length ? out.hardware : ["none"];
  titles.goodput.text = "Goodput " + basis + ", TTFT <= " + L.ttft[idx.ttft] + " s, TPOT <= " +
    L.tpot[idx.tpot] + " s";
  captions.goodput.text = "Best throughput over batch and layout that meets both targets, at a " +
    L.context_choice[idx.context_choice] + "-token prompt: " + rows.length + " of " + n +
    " devices meet them.";
  axes.goodput.axis_label = "goodput [" + meta.units["goodput:" + L.basis[idx.basis]] + "]";
}

// ------------------------------------------------------------------ serving front
if (blocks.front) {
  const f = blocks.front.data;
  const [k] = start(meta.shapes.front, 5);
  const a = offsets.data.offsets[k], b = offsets.data.offsets[k + 1];
  const pts = {x: [], y: [], hardware: [], colour: [], marker: [], batch: [], layout: [],
               tpot: []};
  const lines = {xs: [], ys: [], colour: [], hardware: []};
  let cur = -1;
  for (let j = a; j < b; j++) {
    const h = f.hardware[j];
    pts.x.push(f.user[j]); pts.y.push(f.unit[j]); pts.hardware.push(hw(h));
    pts.colour.push(meta.colours[h]); pts.marker.push(meta.markers[h]);
    pts.batch.push(f.batch[j] === 255 ? "" : L.batch[f.batch[j]]); pts.layout.push(lay(f.layout[j]));
    pts.tpot.push(fmt(1 / f.user[j]));
    if (h !== cur) { lines.xs.push([]); lines.ys.push([]); lines.colour.push(meta.colours[h]);
                     lines.hardware.push(hw(h)); cur = h; }
    // a step: the front holds its throughput up to the next point's speed
    const xs = lines.xs[lines.xs.length - 1], ys = lines.ys[lines.ys.length - 1];
    if (xs.length) { xs.push(f.user[j]); ys.push(ys[ys.length - 1]); }
    xs.push(f.user[j]); ys.push(f.unit[j]);
  }
  front.data = pts;
  front_lines.data = lines;
  titles.front.text = "Serving front " + basis + ", " + L.context_choice[idx.context_choice] +
    "-token prompt";
  axes.front.axis_label = "throughput [" + meta.units["front:" + L.basis[idx.basis]] + "]";
}

// ------------------------------------------------------------------ roofline
if (blocks.roofline) {
  const r = blocks.roofline.data, rf = blocks.roofs.data;
  const [s0, n] = start(meta.shapes.roofline, 3);  // engine, model, precision; run: hardware x batch
  const nb = L.batch.length;
  const pts = {x: [], y: [], hardware: [], colour: [], marker: [], batch: []};
  const roofs = {xs: [], ys: [], colour: [], hardware: []};
  for (let i = 0; i < n; i++) {
    const x = r.ai[s0 + i], y = r.flops[s0 + i], h = Math.floor(i / nb);
    if (!(Number.isFinite(x) && Number.isFinite(y) && x > 0 && y > 0)) continue;
    pts.x.push(x); pts.y.push(y); pts.hardware.push(L.hardware[h]); pts.batch.push(L.batch[i % nb]);
    pts.colour.push(meta.colours[h]); pts.marker.push(meta.markers[h]);
    if (roofs.hardware[roofs.hardware.length - 1] !== L.hardware[h]) {
      const q = (idx.precision * L.hardware.length + h) * 3;
      roofs.xs.push(Array.from(rf.x.slice(q, q + 3)));
      roofs.ys.push(Array.from(rf.y.slice(q, q + 3)));
      roofs.colour.push(meta.colours[h]); roofs.hardware.push(L.hardware[h]);
    }
  }
  roofline.data = pts;
  roof_lines.data = roofs;
}
