//! rooftop-report: renderers of rooftop analyses and device lists.
//!
//! One module per format (`table`, `json`, `csv`, `markdown`, `html` with its `svg`
//! charts, `perfetto`), each a pure function from core results to a `String`; the CLI
//! decides where the bytes go. Renderers never compute: every number they print comes
//! from the core, with its provenance. `diff` compares two exports (`rooftop diff`);
//! `local_devices` lists this machine's devices (`rooftop devices --local`).

pub mod bench;
pub mod collectives;
pub mod compare;
pub mod counters;
pub mod csv;
pub mod devices;
pub mod diff;
pub mod html;
pub mod json;
pub mod local_devices;
pub mod markdown;
pub mod model;
pub mod perfetto;
pub mod perfetto_cp;
pub mod rows;
pub mod svg;
pub mod table;
pub mod trace;
pub mod trace_gaps;
pub mod trace_gaps_csv;
pub mod xla;

/// What every table, Markdown and HTML report shows for a value that is missing (not
/// measured, not read, not applicable); CSV leaves the cell empty and JSON writes `null`.
pub(crate) const MISSING: &str = "—";

use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;

/// A renderer could not produce its output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A CSV document could not be written (a row whose length is not the header's).
    #[error("cannot write CSV: {0}")]
    Csv(String),
}

/// Wraps `text` to `width` columns, the first line prefixed by `first`, the others by
/// `rest`; ends with a newline.
pub fn wrap_text(text: &str, width: usize, first: &str, rest: &str) -> String {
    table::wrap(text, width, first, rest)
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
    /// One self-contained HTML page with an SVG roofline chart.
    Html,
    /// Chrome-trace JSON for ui.perfetto.dev. Only traces have a timeline: the CLI
    /// refuses it elsewhere, and these functions fall back to JSON.
    Perfetto,
}

/// Renders analyses in `format`.
pub fn analyses(format: Format, items: &[Analysis]) -> Result<String, RenderError> {
    Ok(match format {
        Format::Table => items.iter().map(table::analysis).collect::<Vec<_>>().join("\n"),
        Format::Json | Format::Perfetto => json::analyses(items),
        Format::Csv => csv::analyses(items)?,
        Format::Html => html::analyses(items, None),
        Format::Markdown => items.iter().map(markdown::analysis).collect::<Vec<_>>().join("\n"),
    })
}

/// Renders a device list in `format`.
pub fn device_list(format: Format, devs: &[DeviceSpec]) -> Result<String, RenderError> {
    Ok(match format {
        Format::Table => table::devices(devs),
        Format::Json | Format::Perfetto => json::devices(devs),
        Format::Csv => csv::devices(devs)?,
        Format::Html => html::devices(devs),
        Format::Markdown => markdown::devices(devs),
    })
}

/// Renders one device in full in `format`.
pub fn device_detail(format: Format, d: &DeviceSpec) -> Result<String, RenderError> {
    Ok(match format {
        Format::Table => table::device_detail(d),
        Format::Json | Format::Perfetto => json::device(d),
        Format::Csv => csv::device_detail(d)?,
        Format::Html => html::device_detail(d),
        Format::Markdown => markdown::device_detail(d),
    })
}
