//! SVG charts written by hand (no plotting framework, as inferno's flame graphs): the
//! roofline chart on log-log axes and the bandwidth-versus-working-set line chart.
//!
//! Both are pure functions from a description of what to draw to an `<svg>` element for
//! the HTML report. The numbers they place come from the analysis objects; the charts
//! only map them to pixels. Invariants: the output is well-formed XML (every text goes
//! through [`esc`]); every mark given is drawn (inside the plot, clamped to its edge
//! when outside the axis range, and then its tooltip says so); no non-finite coordinate
//! is ever written.

use rooftop_core::roofline::Bound;
use std::fmt::Write as _;

/// Escapes text for XML and HTML (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0; kernel names never need them.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// How a roof was obtained, which sets its line style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoofStyle {
    /// A datasheet figure (solid line).
    Catalog,
    /// Measured on this machine: `rooftop ceilings`, calibrated (dashed).
    Measured,
    /// Derived from hardware counters (dotted).
    Counters,
    /// A catalog "achievable" figure, below the peak (dash-dot).
    Achievable,
}

impl RoofStyle {
    fn dash(self) -> &'static str {
        match self {
            RoofStyle::Catalog => "",
            RoofStyle::Measured => " stroke-dasharray=\"7 4\"",
            RoofStyle::Counters => " stroke-dasharray=\"2 3\"",
            RoofStyle::Achievable => " stroke-dasharray=\"9 3 2 3\"",
        }
    }

    /// The word the legend and the tooltips use.
    pub fn as_str(self) -> &'static str {
        match self {
            RoofStyle::Catalog => "catalog",
            RoofStyle::Measured => "measured / calibrated",
            RoofStyle::Counters => "counters",
            RoofStyle::Achievable => "achievable (catalog)",
        }
    }
}

/// One roof: a compute ceiling (FLOP/s, horizontal) or a memory level (B/s, diagonal).
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    /// `fp16 matrix`, `DRAM`, `L2`.
    pub label: String,
    /// FLOP/s for a compute roof, B/s for a memory roof.
    pub value: f64,
    pub memory: bool,
    pub style: RoofStyle,
    /// The roof the analysis used (drawn thicker, with its ridge point).
    pub primary: bool,
    /// Tooltip text: value, provenance and source.
    pub tip: String,
}

/// One kernel or op on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// FLOP per byte (finite, > 0).
    pub intensity: f64,
    /// Achieved FLOP/s (finite, > 0).
    pub rate: f64,
    /// Share of time, any non-negative unit: the mark's area is proportional to it.
    pub weight: f64,
    pub bound: Option<Bound>,
    /// Drawn as an outline: a bound, not a measurement (no time given).
    pub hollow: bool,
    /// The `id` of the table row it stands for (clicking the mark scrolls there).
    pub row: Option<String>,
    /// Tooltip lines: name, shape, time, attainment, top finding.
    pub tip: Vec<String>,
}

/// What a roofline chart shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RooflineChart {
    pub roofs: Vec<Roof>,
    pub marks: Vec<Mark>,
    /// Accessible name of the chart.
    pub title: String,
}

/// Colour of a bound (also used by the HTML legend).
pub fn bound_colour(b: Option<Bound>) -> &'static str {
    match b {
        Some(Bound::Memory) => "#d95f02",
        Some(Bound::Compute) => "#1b9e77",
        Some(Bound::Balanced) => "#7570b3",
        None => "#888888",
    }
}

const W: f64 = 960.0;
const H: f64 = 560.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 215.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 56.0;
/// Radius of a mark that holds all the time.
const R_MAX: f64 = 26.0;
/// Smallest radius, so that a mark with little time stays visible and clickable.
const R_MIN: f64 = 2.5;

/// A logarithmic axis over whole decades (or powers of `base`).
#[derive(Debug, Clone, Copy)]
struct LogAxis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl LogAxis {
    /// From data bounds to whole decades, at least `min_decades` wide and at most
    /// `max_decades` (keeping the top).
    fn decades(min: f64, max: f64, p0: f64, p1: f64, min_decades: f64, max_decades: f64) -> Self {
        // A hair of slack, so that 0.999999e9 (a rounding error) stays in the 1e9 decade.
        let (mut lo, mut hi) = ((min.log10() + 1e-6).floor(), (max.log10() - 1e-6).ceil());
        if !lo.is_finite() || !hi.is_finite() || hi < lo {
            (lo, hi) = (0.0, 3.0);
        }
        while hi - lo < min_decades {
            lo -= 1.0;
            if hi - lo < min_decades {
                hi += 1.0;
            }
        }
        if hi - lo > max_decades {
            lo = hi - max_decades;
        }
        LogAxis { lo, hi, p0, p1 }
    }

    fn min(&self) -> f64 {
        10f64.powf(self.lo)
    }

    fn max(&self) -> f64 {
        10f64.powf(self.hi)
    }

    /// Pixel of `v` (clamped into the axis).
    fn px(&self, v: f64) -> f64 {
        let l = if v > 0.0 && v.is_finite() { v.log10().clamp(self.lo, self.hi) } else { self.lo };
        self.p0 + (l - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }

    fn contains(&self, v: f64) -> bool {
        v > 0.0 && v.is_finite() && (self.lo..=self.hi).contains(&v.log10())
    }

    fn decade_values(&self) -> Vec<f64> {
        let (lo, hi) = (self.lo as i32, self.hi as i32);
        (lo..=hi).map(|e| 10f64.powi(e)).collect()
    }

    fn minor_values(&self) -> Vec<f64> {
        let (lo, hi) = (self.lo as i32, self.hi as i32);
        let mut out = Vec::new();
        for e in lo..hi {
            for m in 2..10 {
                out.push(f64::from(m) * 10f64.powi(e));
            }
        }
        out
    }
}

/// `0.01`, `1`, `1000`, `1e5`: a decade as a plain number.
fn plain_decade(v: f64) -> String {
    let e = v.log10().round() as i32;
    if (-3..=4).contains(&e) {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("1e{e}")
    }
}

/// `1G`, `10G`, `100T`: a decade with an SI prefix.
fn si_decade(v: f64) -> String {
    let e = v.log10().round() as i32;
    let prefixes = [
        (-12, "p"),
        (-9, "n"),
        (-6, "µ"),
        (-3, "m"),
        (0, ""),
        (3, "k"),
        (6, "M"),
        (9, "G"),
        (12, "T"),
        (15, "P"),
        (18, "E"),
    ];
    let (base, p) = prefixes.iter().rev().find(|(b, _)| e >= *b).copied().unwrap_or((-12, "p"));
    let mantissa = 10i64.pow(u32::try_from(e - base).unwrap_or(0).min(2));
    format!("{mantissa}{p}")
}

fn f(v: f64) -> String {
    // One decimal is finer than a pixel; never write NaN or inf into the SVG.
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "0".to_string()
    }
}

/// The grid, ticks, tick labels and axis titles of a log-log plot.
// l, r, t, b: the plot's left, right, top and bottom edges in pixels.
#[allow(clippy::many_single_char_names)]
fn axes(
    out: &mut String,
    x: &LogAxis,
    y: &LogAxis,
    xlabel: &dyn Fn(f64) -> String,
    titles: (&str, &str),
) {
    let (l, r, t, b) = (x.p0, x.p1, y.p1, y.p0);
    out.push_str("<g class=\"grid\">");
    for v in x.decade_values() {
        let px = x.px(v);
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            f(px),
            f(t),
            f(px),
            f(b)
        );
    }
    for v in y.decade_values() {
        let py = y.px(v);
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            f(l),
            f(py),
            f(r),
            f(py)
        );
    }
    out.push_str("</g><g class=\"axis\">");
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
        f(l),
        f(t),
        f(r - l),
        f(b - t)
    );
    let minor_x = x.hi - x.lo <= 8.0;
    let minor_y = y.hi - y.lo <= 8.0;
    for v in x.decade_values() {
        let px = x.px(v);
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{px}\" y1=\"{b}\" x2=\"{px}\" y2=\"{b6}\"/>\
             <text class=\"tick-label\" x=\"{px}\" y=\"{b19}\" text-anchor=\"middle\">{}</text>",
            esc(&xlabel(v)),
            px = f(px),
            b = f(b),
            b6 = f(b + 6.0),
            b19 = f(b + 19.0),
        );
    }
    if minor_x {
        for v in x.minor_values() {
            let px = f(x.px(v));
            let _ = write!(
                out,
                "<line class=\"tick minor\" x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{}\"/>",
                f(b),
                f(b + 3.0)
            );
        }
    }
    for v in y.decade_values() {
        let py = y.px(v);
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{l6}\" y1=\"{py}\" x2=\"{l}\" y2=\"{py}\"/>\
             <text class=\"tick-label\" x=\"{l9}\" y=\"{py4}\" text-anchor=\"end\">{}</text>",
            esc(&si_decade(v)),
            l6 = f(l - 6.0),
            l = f(l),
            l9 = f(l - 9.0),
            py = f(py),
            py4 = f(py + 4.0),
        );
    }
    if minor_y {
        for v in y.minor_values() {
            let py = f(y.px(v));
            let _ = write!(
                out,
                "<line class=\"tick minor\" x1=\"{}\" y1=\"{py}\" x2=\"{}\" y2=\"{py}\"/>",
                f(l - 3.0),
                f(l)
            );
        }
    }
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text class=\"axis-title\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\">{}</text></g>",
        f(f64::midpoint(l, r)),
        f(b + 42.0),
        esc(titles.0),
        f(l - 58.0),
        f(f64::midpoint(t, b)),
        esc(titles.1)
    );
}

/// Moves label positions (pixels, any order) apart so that no two are closer than
/// `gap`, keeping them inside `lo..=hi` where possible. Returns them in input order.
fn spread_labels(ys: &[f64], gap: f64, lo: f64, hi: f64) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..ys.len()).collect();
    idx.sort_by(|&a, &b| ys[a].total_cmp(&ys[b]));
    let mut placed = vec![0.0; ys.len()];
    let mut prev = f64::NEG_INFINITY;
    for &i in &idx {
        let y = ys[i].max(prev + gap).max(lo);
        placed[i] = y;
        prev = y;
    }
    // Pushed past the bottom: shift the run back up.
    if let Some(&last) = idx.last() {
        let over = placed[last] - hi;
        if over > 0.0 {
            for &i in &idx {
                placed[i] -= over;
            }
        }
    }
    placed
}

/// The roofline chart as an `<svg>` element.
pub fn roofline(chart: &RooflineChart) -> String {
    let compute: Vec<&Roof> =
        chart.roofs.iter().filter(|r| !r.memory && r.value.is_finite() && r.value > 0.0).collect();
    let memory: Vec<&Roof> =
        chart.roofs.iter().filter(|r| r.memory && r.value.is_finite() && r.value > 0.0).collect();
    let marks: Vec<&Mark> = chart
        .marks
        .iter()
        .filter(|m| {
            m.intensity.is_finite() && m.intensity > 0.0 && m.rate.is_finite() && m.rate > 0.0
        })
        .collect();
    let (x, y) = chart_axes(&compute, &memory, &marks);

    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart roofline\" viewBox=\"0 0 {W} {H}\" \
         role=\"img\" aria-label=\"{}\">",
        esc(&chart.title)
    );
    let _ = write!(
        out,
        "<defs><clipPath id=\"plot-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        f(x.p0),
        f(y.p1),
        f(x.p1 - x.p0),
        f(y.p0 - y.p1)
    );
    axes(&mut out, &x, &y, &plain_decade, ("arithmetic intensity (FLOP/byte)", "rate (FLOP/s)"));

    draw_roofs(&mut out, &compute, &memory, &x, &y);

    draw_marks(&mut out, &marks, &x, &y);
    out.push_str("</svg>");
    out
}

/// The chart's axes: x spans the marks' intensities and the ridge points with a decade
/// of room; y the highest roof or mark on top and two decades under the lowest compute
/// roof below.
fn chart_axes(compute: &[&Roof], memory: &[&Roof], marks: &[&Mark]) -> (LogAxis, LogAxis) {
    let cmax = compute.iter().map(|r| r.value).fold(f64::NAN, f64::max);
    let cmin = compute.iter().map(|r| r.value).fold(f64::NAN, f64::min);
    let bmax = memory.iter().map(|r| r.value).fold(f64::NAN, f64::max);
    let bmin = memory.iter().map(|r| r.value).fold(f64::NAN, f64::min);

    // x: the marks' intensities and the ridge points, with a decade of room.
    let mut xs: Vec<f64> = marks.iter().map(|m| m.intensity).collect();
    if cmax.is_finite() && bmin.is_finite() {
        xs.push(cmax / bmin);
    }
    if cmin.is_finite() && bmax.is_finite() {
        xs.push(cmin / bmax);
    }
    let xmin = xs.iter().copied().fold(f64::NAN, f64::min);
    let xmax = xs.iter().copied().fold(f64::NAN, f64::max);
    let x = LogAxis::decades(xmin / 2.0, xmax * 2.0, LEFT, W - RIGHT, 3.0, 10.0);

    // y: the highest roof or mark on top; below, the marks and two decades under the
    // lowest compute roof.
    let mut ys: Vec<f64> = marks.iter().map(|m| m.rate).collect();
    ys.extend(compute.iter().map(|r| r.value));
    if compute.is_empty() {
        ys.extend(memory.iter().map(|r| r.value * x.max()));
    }
    let ytop = ys.iter().copied().fold(f64::NAN, f64::max) * 1.5;
    let mut ybottom = marks.iter().map(|m| m.rate).fold(f64::NAN, f64::min) / 1.5;
    if cmin.is_finite() {
        ybottom = ybottom.min(cmin / 10.0);
    }
    if bmin.is_finite() {
        ybottom = ybottom.min(bmin * x.min()).max(ytop / 1e7);
    }
    let y = LogAxis::decades(ybottom, ytop, H - BOTTOM, TOP, 2.0, 9.0);

    (x, y)
}

/// The roofs (memory diagonals up to the highest compute roof, compute horizontals from
/// the highest bandwidth), the primary roofline over them with its ridge points, and the
/// roofs' labels.
fn draw_roofs(out: &mut String, compute: &[&Roof], memory: &[&Roof], x: &LogAxis, y: &LogAxis) {
    let cmax = compute.iter().map(|r| r.value).fold(f64::NAN, f64::max);
    let bmax = memory.iter().map(|r| r.value).fold(f64::NAN, f64::max);
    // Roofs: memory diagonals up to the highest compute roof, compute horizontals from
    // the highest bandwidth; the primary roofline drawn over them, thicker.
    out.push_str("<g class=\"roofs\" clip-path=\"url(#plot-clip)\">");
    let mut labels_right: Vec<(f64, String, &Roof)> = Vec::new();
    for r in compute {
        let x0 = if bmax.is_finite() { (r.value / bmax).max(x.min()) } else { x.min() };
        let yy = y.px(r.value);
        let _ = write!(
            out,
            "<line class=\"roof compute tipped{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}><title>{}</title></line>",
            if r.primary { " primary" } else { "" },
            f(x.px(x0)),
            f(yy),
            f(x.p1),
            f(yy),
            r.style.dash(),
            esc(&r.tip)
        );
        labels_right.push((yy, r.label.clone(), r));
    }
    let angle =
        ((y.p0 - y.p1) / (y.hi - y.lo) / ((x.p1 - x.p0) / (x.hi - x.lo))).atan().to_degrees();
    let mut memory_labels = String::new();
    for r in memory {
        let x0 = (y.min() / r.value).max(x.min());
        let top = if cmax.is_finite() { cmax } else { y.max() };
        let x1 = (top / r.value).min(x.max());
        if x1 <= x0 {
            continue;
        }
        let (p0x, p0y, p1x, p1y) = (x.px(x0), y.px(r.value * x0), x.px(x1), y.px(r.value * x1));
        let _ = write!(
            out,
            "<line class=\"roof memory tipped{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}><title>{}</title></line>",
            if r.primary { " primary" } else { "" },
            f(p0x),
            f(p0y),
            f(p1x),
            f(p1y),
            r.style.dash(),
            esc(&r.tip)
        );
        // The label sits on the line, a little way in from where it enters the plot.
        let t = 0.1;
        let (lx, ly) = (p0x + (p1x - p0x) * t, p0y + (p1y - p0y) * t);
        let _ = write!(
            memory_labels,
            "<text class=\"roof-label memory\" transform=\"translate({} {}) rotate({})\" dy=\"-5\">{}</text>",
            f(lx),
            f(ly),
            f(-angle),
            esc(&r.label)
        );
    }
    // Primary roofline and ridge points.
    let pc = compute
        .iter()
        .find(|r| r.primary)
        .or_else(|| compute.iter().max_by(|a, b| a.value.total_cmp(&b.value)));
    let pm = memory.iter().find(|r| r.primary).or_else(|| memory.first());
    let mut ridges = String::new();
    if let (Some(c), Some(m)) = (pc, pm) {
        let ridge = c.value / m.value;
        let x0 = (y.min() / m.value).max(x.min());
        let _ = write!(
            out,
            "<polyline class=\"roofline-primary\" points=\"{},{} {},{} {},{}\"/>",
            f(x.px(x0)),
            f(y.px(m.value * x0)),
            f(x.px(ridge)),
            f(y.px(c.value)),
            f(x.p1),
            f(y.px(c.value))
        );
        if x.contains(ridge) {
            let (rx, ry) = (x.px(ridge), y.px(c.value));
            let _ = write!(
                ridges,
                "<line class=\"ridge-drop\" x1=\"{rx}\" y1=\"{ry}\" x2=\"{rx}\" y2=\"{}\"/>\
                 <circle class=\"ridge primary tipped\" cx=\"{rx}\" cy=\"{ry}\" r=\"4.5\"><title>ridge point: {} ÷ {} = {} FLOP/byte</title></circle>\
                 <text class=\"ridge-label\" x=\"{}\" y=\"{}\">ridge {}</text>",
                f(y.p0),
                esc(&c.label),
                esc(&m.label),
                num3(ridge),
                f(rx + 6.0),
                f(y.p0 - 6.0),
                num3(ridge),
                rx = f(rx),
                ry = f(ry),
            );
        }
        for other in compute.iter().filter(|r| !std::ptr::eq(**r, *c)) {
            let rdg = other.value / m.value;
            if x.contains(rdg) && y.contains(other.value) {
                let _ = write!(
                    ridges,
                    "<circle class=\"ridge tipped\" cx=\"{}\" cy=\"{}\" r=\"3\"><title>ridge point: {} ÷ {} = {} FLOP/byte</title></circle>",
                    f(x.px(rdg)),
                    f(y.px(other.value)),
                    esc(&other.label),
                    esc(&m.label),
                    num3(rdg)
                );
            }
        }
    }
    out.push_str("</g>");
    out.push_str(&memory_labels);
    out.push_str(&ridges);
    // Compute roof labels in the right margin, pushed apart when roofs are close.
    let placed = spread_labels(
        &labels_right.iter().map(|(yy, _, _)| *yy).collect::<Vec<_>>(),
        13.0,
        y.p1 + 4.0,
        y.p0,
    );
    for ((yy, label, r), py) in labels_right.iter().zip(placed) {
        let _ = write!(
            out,
            "<g class=\"roof-label compute tipped\"><title>{}</title>{}<text x=\"{}\" y=\"{}\">{}</text></g>",
            esc(&r.tip),
            if (py - yy).abs() > 1.0 {
                format!(
                    "<line class=\"leader\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                    f(x.p1),
                    f(*yy),
                    f(x.p1 + 6.0),
                    f(py - 4.0)
                )
            } else {
                String::new()
            },
            f(x.p1 + 8.0),
            f(py),
            esc(&clip(label, 32))
        );
    }
}

/// The marks, the largest first so that small ones stay on top and clickable, and their
/// labels.
fn draw_marks(out: &mut String, marks: &[&Mark], x: &LogAxis, y: &LogAxis) {
    // Marks: the largest first, so small ones stay on top and clickable.
    let total: f64 = marks.iter().map(|m| m.weight.max(0.0)).sum();
    let mut order: Vec<&&Mark> = marks.iter().collect();
    order.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    out.push_str("<g class=\"marks\">");
    for m in order {
        let share = if total > 0.0 { m.weight.max(0.0) / total } else { 1.0 / marks.len() as f64 };
        let r = (share.sqrt() * R_MAX).max(R_MIN);
        let mut tip = m.tip.join("\n");
        if !x.contains(m.intensity) || !y.contains(m.rate) {
            tip.push_str("\n(outside the axis range: drawn at its edge)");
        }
        let colour = bound_colour(m.bound);
        let _ = write!(
            out,
            "<circle class=\"mark tipped{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"{}\"{}><title>{}</title></circle>",
            if m.hollow { " hollow" } else { "" },
            f(x.px(m.intensity)),
            f(y.px(m.rate)),
            f(r),
            if m.hollow { "none" } else { colour },
            colour,
            m.row.as_ref().map(|id| format!(" data-row=\"{}\"", esc(id))).unwrap_or_default(),
            esc(&tip)
        );
    }
    out.push_str("</g>");
    out.push_str(&mark_labels(marks, x, y, total));
}

/// Names next to the largest marks (at most [`MAX_LABELS`]), skipping any label that
/// would overlap one already placed, so that the chart stays readable with 500 marks.
fn mark_labels(marks: &[&Mark], x: &LogAxis, y: &LogAxis, total: f64) -> String {
    let mut order: Vec<&&Mark> = marks.iter().collect();
    order.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let mut placed: Vec<(f64, f64, f64, f64)> = Vec::new();
    let mut out = String::new();
    for m in order.into_iter().take(MAX_LABELS * 3) {
        if placed.len() >= MAX_LABELS {
            break;
        }
        let Some(first) = m.tip.first() else { continue };
        let text = clip(first, 30);
        let share = if total > 0.0 { m.weight.max(0.0) / total } else { 1.0 / marks.len() as f64 };
        let r = (share.sqrt() * R_MAX).max(R_MIN);
        let (cx, cy) = (x.px(m.intensity), y.px(m.rate));
        // Average glyph width at 11.5 px.
        let w = text.chars().count() as f64 * 6.4;
        let (x0, anchor) = if cx + r + 4.0 + w <= x.p1 {
            (cx + r + 4.0, "start")
        } else {
            (cx - r - 4.0 - w, "end")
        };
        let bx = (x0, cy - 9.0, x0 + w, cy + 4.0);
        let overlaps =
            |b: &(f64, f64, f64, f64)| !(bx.2 < b.0 || b.2 < bx.0 || bx.3 < b.1 || b.3 < bx.1);
        if bx.0 < x.p0 || placed.iter().any(overlaps) {
            continue;
        }
        placed.push(bx);
        let tx = if anchor == "start" { x0 } else { x0 + w };
        let _ = write!(
            out,
            "<text class=\"mark-label\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            f(tx),
            f(cy + 4.0),
            esc(&text)
        );
    }
    out
}

/// Most marks named on the chart (the largest ones; the others by tooltip).
const MAX_LABELS: usize = 8;

/// `text` cut to `max` characters with an ellipsis (the full text is in the tooltip).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Three significant digits, no unit (chart labels).
pub fn num3(v: f64) -> String {
    rooftop_core::units::sig3(v)
}

/// One line of a line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// `(x, y, tooltip)`.
    pub points: Vec<(f64, f64, String)>,
}

/// A labelled point on a line chart (a cache level's bandwidth).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub y: f64,
    pub label: String,
    pub tip: String,
}

/// A line chart on log-log axes: x in bytes (labelled KiB, MiB, GiB), y a rate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BytesChart {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
}

/// Colours of successive series.
pub const PALETTE: [&str; 6] = ["#1f77b4", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e"];

/// `4 KiB`, `16 MiB`: a byte count that is a power of two.
fn bytes_label(v: f64) -> String {
    let units = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in units {
        let s = size as f64;
        if v >= s {
            return format!("{} {unit}", sig_plain(v / s));
        }
    }
    format!("{} B", sig_plain(v))
}

fn sig_plain(v: f64) -> String {
    let s = rooftop_core::units::sig3(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The bytes chart as an `<svg>` element. Ticks at powers of 4 (or 16 over a wide
/// range); y on decades.
#[allow(clippy::many_single_char_names)]
pub fn bytes_chart(chart: &BytesChart) -> String {
    let pts: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|(x, y, _)| (*x, *y)))
        .chain(chart.markers.iter().map(|m| (m.x, m.y)))
        .filter(|(x, y)| x.is_finite() && *x > 0.0 && y.is_finite() && *y > 0.0)
        .collect();
    let (xmin, xmax) = pts.iter().fold((f64::NAN, f64::NAN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ymin, ymax) = pts.iter().fold((f64::NAN, f64::NAN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    // x on powers of two, one step of room either side.
    let (mut lo2, mut hi2) = (xmin.log2().floor() - 1.0, xmax.log2().ceil() + 1.0);
    if !lo2.is_finite() || !hi2.is_finite() || hi2 <= lo2 {
        (lo2, hi2) = (10.0, 30.0);
    }
    let xl = LogAxis { lo: lo2 * 2f64.log10(), hi: hi2 * 2f64.log10(), p0: LEFT, p1: W - RIGHT };
    let y = LogAxis::decades(ymin / 1.3, ymax * 1.3, H - BOTTOM, TOP, 1.0, 8.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart sweep\" viewBox=\"0 0 {W} {H}\" \
         role=\"img\" aria-label=\"{}\">",
        esc(&chart.title)
    );
    // Grid and axes: reuse the log-log axes with x ticks at powers of 4 or 16.
    let step = if hi2 - lo2 > 24.0 { 4.0 } else { 2.0 };
    let first = (lo2 / step).ceil() * step;
    let mut xticks = Vec::new();
    let mut e = first;
    while e <= hi2 {
        xticks.push(2f64.powf(e));
        e += step;
    }
    let (l, r, t, b) = (xl.p0, xl.p1, y.p1, y.p0);
    out.push_str("<g class=\"grid\">");
    for v in &xticks {
        let px = f(xl.px(*v));
        let _ = write!(out, "<line x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{}\"/>", f(t), f(b));
    }
    for v in y.decade_values() {
        let py = f(y.px(v));
        let _ = write!(out, "<line x1=\"{}\" y1=\"{py}\" x2=\"{}\" y2=\"{py}\"/>", f(l), f(r));
    }
    out.push_str("</g><g class=\"axis\">");
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
        f(l),
        f(t),
        f(r - l),
        f(b - t)
    );
    for v in &xticks {
        let px = f(xl.px(*v));
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{px}\" y1=\"{}\" x2=\"{px}\" y2=\"{}\"/><text class=\"tick-label\" x=\"{px}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            f(b),
            f(b + 6.0),
            f(b + 19.0),
            esc(&bytes_label(*v))
        );
    }
    for v in y.decade_values() {
        let py = y.px(v);
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/><text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            f(l - 6.0),
            f(py),
            f(l),
            f(py),
            f(l - 9.0),
            f(py + 4.0),
            esc(&si_decade(v))
        );
    }
    if y.hi - y.lo <= 8.0 {
        for v in y.minor_values() {
            let py = f(y.px(v));
            let _ = write!(
                out,
                "<line class=\"tick minor\" x1=\"{}\" y1=\"{py}\" x2=\"{}\" y2=\"{py}\"/>",
                f(l - 3.0),
                f(l)
            );
        }
    }
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text class=\"axis-title\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\">{}</text></g>",
        f(f64::midpoint(l, r)),
        f(b + 42.0),
        esc(&chart.x_title),
        f(l - 58.0),
        f(f64::midpoint(t, b)),
        esc(&chart.y_title)
    );
    out.push_str("<g class=\"series\">");
    let mut legend_y = Vec::new();
    for (i, s) in chart.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut pts: Vec<&(f64, f64, String)> = s
            .points
            .iter()
            .filter(|(x, y, _)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let line: Vec<String> =
            pts.iter().map(|(px, py, _)| format!("{},{}", f(xl.px(*px)), f(y.px(*py)))).collect();
        let _ = write!(
            out,
            "<polyline class=\"series-line\" stroke=\"{colour}\" points=\"{}\"/>",
            line.join(" ")
        );
        for (px, py, tip) in &pts {
            let _ = write!(
                out,
                "<circle class=\"point tipped\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{colour}\"><title>{}</title></circle>",
                f(xl.px(*px)),
                f(y.px(*py)),
                esc(tip)
            );
        }
        if let Some((px, py, _)) = pts.last() {
            legend_y.push((y.px(*py), xl.px(*px), s.name.clone(), colour));
        }
    }
    out.push_str("</g><g class=\"markers\">");
    for m in &chart.markers {
        let _ = write!(
            out,
            "<g class=\"marker tipped\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"9\" height=\"9\" transform=\"rotate(45 {} {})\"/>\
             <text x=\"{}\" y=\"{}\">{}</text></g>",
            esc(&m.tip),
            f(xl.px(m.x) - 4.5),
            f(y.px(m.y) - 4.5),
            f(xl.px(m.x)),
            f(y.px(m.y)),
            f(xl.px(m.x) + 8.0),
            f(y.px(m.y) - 8.0),
            esc(&m.label)
        );
    }
    out.push_str("</g>");
    // Series names in the right margin, next to each line's last point.
    let placed = spread_labels(&legend_y.iter().map(|l| l.0).collect::<Vec<_>>(), 14.0, t + 4.0, b);
    for ((_, _, name, colour), py) in legend_y.iter().zip(placed) {
        let _ = write!(
            out,
            "<text class=\"series-label\" x=\"{}\" y=\"{}\" fill=\"{colour}\">{}</text>",
            f(r + 8.0),
            f(py + 4.0),
            esc(name)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roof(label: &str, value: f64, memory: bool) -> Roof {
        Roof {
            label: label.to_string(),
            value,
            memory,
            style: RoofStyle::Catalog,
            primary: false,
            tip: label.to_string(),
        }
    }

    #[test]
    fn decade_labels() {
        assert_eq!(plain_decade(0.01), "0.01");
        assert_eq!(plain_decade(1.0), "1");
        assert_eq!(plain_decade(1000.0), "1000");
        assert_eq!(plain_decade(1e6), "1e6");
        assert_eq!(si_decade(1e9), "1G");
        assert_eq!(si_decade(1e11), "100G");
        assert_eq!(si_decade(1e12), "1T");
        assert_eq!(si_decade(1e-3), "1m");
        assert_eq!(bytes_label(4096.0), "4 KiB");
        assert_eq!(bytes_label(256.0 * 1024.0 * 1024.0), "256 MiB");
    }

    #[test]
    fn axis_maps_decades_to_the_ends() {
        let a = LogAxis::decades(0.5, 900.0, 0.0, 300.0, 1.0, 10.0);
        assert_eq!((a.lo, a.hi), (-1.0, 3.0));
        assert_eq!(a.px(0.1), 0.0);
        assert_eq!(a.px(1000.0), 300.0);
        assert!((a.px(10.0) - 150.0).abs() < 1e-9);
        // Outside: clamped, never NaN.
        assert_eq!(a.px(0.0), 0.0);
        assert_eq!(a.px(f64::NAN), 0.0);
    }

    #[test]
    fn labels_are_pushed_apart() {
        let p = spread_labels(&[100.0, 101.0, 300.0], 13.0, 0.0, 500.0);
        assert_eq!(p, vec![100.0, 113.0, 300.0]);
        let p = spread_labels(&[495.0, 496.0], 13.0, 0.0, 500.0);
        assert!(p.iter().all(|y| *y <= 500.0), "{p:?}");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(esc("x\u{1}y"), "x y");
    }

    #[test]
    fn one_mark_per_input_and_no_nan() {
        let chart = RooflineChart {
            roofs: vec![roof("fp32 vector", 1e12, false), roof("DRAM", 1e11, true)],
            marks: (0..500)
                .map(|i| Mark {
                    intensity: 0.01 * f64::from(i + 1),
                    rate: 1e9 * f64::from(i + 1),
                    weight: f64::from(i),
                    bound: Some(Bound::Memory),
                    hollow: false,
                    row: Some(format!("r{i}")),
                    tip: vec![format!("k{i} <T>")],
                })
                .collect(),
            title: "t".to_string(),
        };
        let svg = roofline(&chart);
        assert_eq!(svg.matches("class=\"mark ").count(), 500);
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite coordinate");
        assert!(svg.contains("k499 &lt;T&gt;"));
        assert!(svg.contains("ridge 10.0"));
    }
}
