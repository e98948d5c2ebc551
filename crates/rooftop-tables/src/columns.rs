//! Typed columns and the one generic writer and reader of a flat table: every column a
//! required or optional primitive (INT32, INT64, DOUBLE, BOOLEAN, or BYTE_ARRAY as
//! UTF-8 `STRING`), no nesting, so DuckDB, pyarrow/pandas and Spark read the files
//! unchanged. Written with Snappy compression and dictionary encoding; row groups of
//! at most [`ROW_GROUP_ROWS`] rows keep the writer's memory bounded.
//!
//! The reader never trusts the file: it checks each column's presence, physical type
//! and repetition before reading it (a wrong type is an error naming the column, not a
//! panic), and the schema version in the key-value metadata.

use crate::error::TableError;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use rooftop_core::limits::Limit;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// Rows per row group.
pub const ROW_GROUP_ROWS: usize = 131_072;

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    I32,
    I64,
    F64,
    Bool,
    Str,
}

impl Kind {
    fn physical(self) -> Physical {
        match self {
            Kind::I32 => Physical::INT32,
            Kind::I64 => Physical::INT64,
            Kind::F64 => Physical::DOUBLE,
            Kind::Bool => Physical::BOOLEAN,
            Kind::Str => Physical::BYTE_ARRAY,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::I32 => "INT32",
            Kind::I64 => "INT64",
            Kind::F64 => "DOUBLE",
            Kind::Bool => "BOOLEAN",
            Kind::Str => "BYTE_ARRAY (UTF-8)",
        }
    }
}

/// A column of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub name: &'static str,
    pub kind: Kind,
    pub optional: bool,
}

pub const fn req(name: &'static str, kind: Kind) -> Spec {
    Spec { name, kind, optional: false }
}

pub const fn opt(name: &'static str, kind: Kind) -> Spec {
    Spec { name, kind, optional: true }
}

/// One column's values (`None` is null; required columns hold no `None`).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    I32(Vec<Option<i32>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Str(Vec<Option<String>>),
    /// Strings as the writer holds them (shared buffers: a name repeated on every row is
    /// stored once).
    Bytes(Vec<Option<ByteArray>>),
}

impl Values {
    pub fn empty(kind: Kind) -> Values {
        match kind {
            Kind::I32 => Values::I32(Vec::new()),
            Kind::I64 => Values::I64(Vec::new()),
            Kind::F64 => Values::F64(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Str => Values::Str(Vec::new()),
        }
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        match self {
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str(v) => v.len(),
            Values::Bytes(v) => v.len(),
        }
    }

    fn clear(&mut self) {
        match self {
            Values::I32(v) => v.clear(),
            Values::I64(v) => v.clear(),
            Values::F64(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Str(v) => v.clear(),
            Values::Bytes(v) => v.clear(),
        }
    }
}

/// Key-value metadata every table carries.
pub const KEY_SCHEMA: &str = "rooftop.schema";
pub const KEY_VERSION: &str = "rooftop.schema_version";
pub const KEY_TABLE: &str = "rooftop.table";
pub const SCHEMA_NAME: &str = "rooftop-rank-tables";

fn schema_of(specs: &[Spec]) -> Result<Type, parquet::errors::ParquetError> {
    let mut fields = Vec::with_capacity(specs.len());
    for s in specs {
        let mut b = Type::primitive_type_builder(s.name, s.kind.physical())
            .with_repetition(if s.optional { Repetition::OPTIONAL } else { Repetition::REQUIRED });
        if s.kind == Kind::Str {
            b = b.with_logical_type(Some(LogicalType::String));
        }
        fields.push(Arc::new(b.build()?));
    }
    Type::group_type_builder("schema").with_fields(fields).build()
}

/// Writes a table in row groups. Columns are filled with [`TableWriter::push`] through
/// [`Row`]s and flushed every [`ROW_GROUP_ROWS`] rows.
pub struct TableWriter {
    path: std::path::PathBuf,
    specs: &'static [Spec],
    writer: SerializedFileWriter<File>,
    cols: Vec<Values>,
    rows: usize,
    /// Recent distinct strings and their shared buffers.
    strings: std::collections::HashMap<Box<str>, ByteArray>,
}

impl std::fmt::Debug for TableWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter")
            .field("path", &self.path)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl TableWriter {
    pub fn create(
        path: &Path,
        table: &str,
        version: u32,
        specs: &'static [Spec],
    ) -> Result<TableWriter, TableError> {
        let pq = |e: parquet::errors::ParquetError| TableError::parquet(path, &e);
        let file = File::create(path)
            .map_err(|e| TableError::Io { path: path.to_path_buf(), source: e })?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("rooftop {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new(KEY_SCHEMA.to_string(), SCHEMA_NAME.to_string()),
                KeyValue::new(KEY_VERSION.to_string(), version.to_string()),
                KeyValue::new(KEY_TABLE.to_string(), table.to_string()),
            ]))
            .build();
        let schema = schema_of(specs).map_err(pq)?;
        let writer =
            SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).map_err(pq)?;
        Ok(TableWriter {
            path: path.to_path_buf(),
            specs,
            writer,
            cols: specs
                .iter()
                .map(|s| {
                    if s.kind == Kind::Str {
                        Values::Bytes(Vec::new())
                    } else {
                        Values::empty(s.kind)
                    }
                })
                .collect(),
            rows: 0,
            strings: std::collections::HashMap::new(),
        })
    }

    /// Appends one row; `fill` sets its cells (in spec order).
    pub fn push(&mut self, fill: impl FnOnce(&mut Row<'_>)) -> Result<(), TableError> {
        let mut row = Row { cols: &mut self.cols, next: 0, strings: &mut self.strings };
        fill(&mut row);
        self.rows += 1;
        if self.cols.first().map_or(0, Values::len) >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TableError> {
        let n = self.cols.first().map_or(0, Values::len);
        if n == 0 {
            return Ok(());
        }
        let path = self.path.clone();
        let pq = |e: parquet::errors::ParquetError| TableError::parquet(&path, &e);
        let mut rg = self.writer.next_row_group().map_err(pq)?;
        for (spec, col) in self.specs.iter().zip(&mut self.cols) {
            let Some(mut cw) = rg.next_column().map_err(pq)? else { break };
            // Cells a row did not set are null (and a bug for required columns, which
            // the writer reports as an error).
            write_column(cw.untyped(), spec, col, n).map_err(pq)?;
            cw.close().map_err(pq)?;
            col.clear();
        }
        rg.close().map_err(pq)?;
        Ok(())
    }

    /// Flushes and closes the file; returns the number of rows.
    pub fn finish(mut self) -> Result<usize, TableError> {
        self.flush()?;
        let path = self.path.clone();
        self.writer.close().map_err(|e| TableError::parquet(&path, &e))?;
        Ok(self.rows)
    }
}

/// The cells of one row, set in spec order.
pub struct Row<'a> {
    cols: &'a mut [Values],
    next: usize,
    strings: &'a mut std::collections::HashMap<Box<str>, ByteArray>,
}

impl std::fmt::Debug for Row<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Row").field("next", &self.next).finish_non_exhaustive()
    }
}

impl Row<'_> {
    fn col(&mut self) -> Option<&mut Values> {
        let c = self.cols.get_mut(self.next);
        self.next += 1;
        c
    }

    pub fn i32(&mut self, v: Option<i32>) -> &mut Self {
        if let Some(Values::I32(c)) = self.col() {
            c.push(v);
        }
        self
    }

    pub fn i64(&mut self, v: Option<i64>) -> &mut Self {
        if let Some(Values::I64(c)) = self.col() {
            c.push(v);
        }
        self
    }

    /// An unsigned count; values above `i64::MAX` (never seen in practice) are null.
    pub fn u64(&mut self, v: Option<u64>) -> &mut Self {
        self.i64(v.and_then(|x| i64::try_from(x).ok()))
    }

    pub fn f64(&mut self, v: Option<f64>) -> &mut Self {
        if let Some(Values::F64(c)) = self.col() {
            c.push(v);
        }
        self
    }

    pub fn bool(&mut self, v: Option<bool>) -> &mut Self {
        if let Some(Values::Bool(c)) = self.col() {
            c.push(v);
        }
        self
    }

    pub fn str(&mut self, v: Option<&str>) -> &mut Self {
        let b = v.map(|s| {
            if let Some(b) = self.strings.get(s) {
                return b.clone();
            }
            let b = ByteArray::from(s);
            if self.strings.len() >= 65_536 {
                self.strings.clear();
            }
            self.strings.insert(s.into(), b.clone());
            b
        });
        if let Some(Values::Bytes(c)) = self.col() {
            c.push(b);
        }
        self
    }
}

fn levels<T>(v: &[Option<T>], n: usize) -> Vec<i16> {
    (0..n).map(|i| i16::from(v.get(i).is_some_and(Option::is_some))).collect()
}

fn write_column(
    w: &mut ColumnWriter<'_>,
    spec: &Spec,
    col: &Values,
    n: usize,
) -> Result<(), parquet::errors::ParquetError> {
    use parquet::errors::ParquetError;
    let missing =
        || ParquetError::General(format!("column `{}`: a required cell is null", spec.name));
    macro_rules! put {
        ($w:expr, $vals:expr, $conv:expr) => {{
            let vals: Vec<_> = $vals.iter().flatten().map($conv).collect();
            if spec.optional {
                let defs = levels($vals, n);
                $w.write_batch(&vals, Some(&defs), None)?;
            } else {
                if vals.len() != n {
                    return Err(missing());
                }
                $w.write_batch(&vals, None, None)?;
            }
        }};
    }
    match (w, col) {
        (ColumnWriter::Int32ColumnWriter(w), Values::I32(v)) => put!(w, v, |x: &i32| *x),
        (ColumnWriter::Int64ColumnWriter(w), Values::I64(v)) => put!(w, v, |x: &i64| *x),
        (ColumnWriter::DoubleColumnWriter(w), Values::F64(v)) => put!(w, v, |x: &f64| *x),
        (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => put!(w, v, |x: &bool| *x),
        (ColumnWriter::ByteArrayColumnWriter(w), Values::Bytes(v)) => {
            put!(w, v, |x: &ByteArray| x.clone());
        }
        _ => {
            return Err(ParquetError::General(format!(
                "column `{}`: writer type mismatch",
                spec.name
            )))
        }
    }
    Ok(())
}

/// A whole table read back: columns in `specs` order.
#[derive(Debug)]
pub struct TableData {
    pub rows: usize,
    pub cols: Vec<Values>,
}

thread_local! {
    static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside the Parquet reader. The `parquet` crate panics on some
/// damaged metadata (`column start and length should not be negative`, seen by the
/// mutation test); `read_table` turns such a panic into an error, and a binary's
/// panic hook can stay silent while this is true.
pub fn in_reader() -> bool {
    READING.with(std::cell::Cell::get)
}

/// Reads the columns `specs` names from `path`, checking types and the schema version
/// (at most `max_version`).
pub fn read_table(
    path: &Path,
    table: &str,
    max_version: u32,
    specs: &[Spec],
) -> Result<TableData, TableError> {
    READING.with(|r| r.set(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        read_table_unguarded(path, table, max_version, specs)
    }));
    READING.with(|r| r.set(false));
    out.unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the Parquet reader failed".to_string());
        Err(TableError::Parquet {
            path: path.to_path_buf(),
            message: format!("damaged file ({why})"),
        })
    })
}

fn read_table_unguarded(
    path: &Path,
    table: &str,
    max_version: u32,
    specs: &[Spec],
) -> Result<TableData, TableError> {
    let file =
        File::open(path).map_err(|e| TableError::Io { path: path.to_path_buf(), source: e })?;
    let pq = |e: parquet::errors::ParquetError| TableError::parquet(path, &e);
    let reader = SerializedFileReader::new(file).map_err(pq)?;
    let meta = reader.metadata();
    if let Some(kv) = meta.file_metadata().key_value_metadata() {
        if let Some(v) = kv.iter().find(|k| k.key == KEY_VERSION).and_then(|k| k.value.clone()) {
            if v.trim().parse::<u32>().map_or(true, |n| n > max_version) {
                return Err(TableError::Version {
                    path: path.to_path_buf(),
                    found: v,
                    supported: max_version,
                });
            }
        }
    }
    let schema = meta.file_metadata().schema_descr();
    let mut index = Vec::with_capacity(specs.len());
    for s in specs {
        let found = (0..schema.num_columns()).find(|&i| schema.column(i).path().string() == s.name);
        let Some(i) = found else {
            return Err(TableError::MissingColumn {
                path: path.to_path_buf(),
                column: s.name.to_string(),
                expected: s.kind.name().to_string(),
                table: table.to_string(),
            });
        };
        let c = schema.column(i);
        let nested = c.max_rep_level() > 0 || c.max_def_level() > 1;
        if c.physical_type() != s.kind.physical() || nested {
            return Err(TableError::Column {
                path: path.to_path_buf(),
                column: s.name.to_string(),
                expected: format!("{} (flat)", s.kind.name()),
                found: format!("{}{}", c.physical_type(), if nested { " (nested)" } else { "" }),
            });
        }
        index.push((i, c.max_def_level()));
    }
    // The rows the file claims, checked before anything is read; the decoded bytes are
    // counted as they are read (a dictionary string repeated per row inflates far past
    // the file's size).
    let claimed: i64 = meta.row_groups().iter().map(|g| g.num_rows().max(0)).sum();
    if u64::try_from(claimed).unwrap_or(0) > Limit::ParquetRows.value() {
        return Err(TableError::Limit {
            path: path.to_path_buf(),
            message: Limit::ParquetRows.exceeded_here(&format!("{claimed} rows")),
        });
    }
    let mut budget = Limit::ParquetBytes.value();
    let mut cols: Vec<Values> = specs.iter().map(|s| Values::empty(s.kind)).collect();
    let mut rows = 0usize;
    for g in 0..reader.num_row_groups() {
        let rg = reader.get_row_group(g).map_err(pq)?;
        let n = usize::try_from(rg.metadata().num_rows()).unwrap_or(0);
        for ((spec, &(i, max_def)), out) in specs.iter().zip(&index).zip(&mut cols) {
            let cr = rg.get_column_reader(i).map_err(pq)?;
            read_column(cr, max_def, n, out, &mut budget).map_err(|e| match e {
                ReadErr::Parquet(e) => pq(e),
                ReadErr::Limit => TableError::Limit {
                    path: path.to_path_buf(),
                    message: Limit::ParquetBytes.exceeded_here(&format!(
                        "more than {} bytes decoded (column `{}`)",
                        Limit::ParquetBytes.value(),
                        spec.name
                    )),
                },
                ReadErr::Value(row, message) => TableError::Value {
                    path: path.to_path_buf(),
                    row: rows + row,
                    column: spec.name.to_string(),
                    message,
                },
            })?;
            if !spec.optional {
                if let Some(row) = first_null(out) {
                    return Err(TableError::Value {
                        path: path.to_path_buf(),
                        row,
                        column: spec.name.to_string(),
                        message: "null in a required column".to_string(),
                    });
                }
            }
        }
        rows += n;
    }
    Ok(TableData { rows, cols })
}

#[allow(clippy::unnecessary_wraps)]
fn ok<T>(v: T) -> Result<T, String> {
    Ok(v)
}

fn first_null(v: &Values) -> Option<usize> {
    match v {
        Values::I32(c) => c.iter().position(Option::is_none),
        Values::I64(c) => c.iter().position(Option::is_none),
        Values::F64(c) => c.iter().position(Option::is_none),
        Values::Bool(c) => c.iter().position(Option::is_none),
        Values::Str(c) => c.iter().position(Option::is_none),
        Values::Bytes(c) => c.iter().position(Option::is_none),
    }
}

enum ReadErr {
    Parquet(parquet::errors::ParquetError),
    Value(usize, String),
    /// The table's decoded bytes went over [`Limit::ParquetBytes`].
    Limit,
}

/// Records read per call: bounds what one call decodes before it is counted.
const BATCH: usize = 4096;

/// Memory a decoded value takes: its slot, plus the text of a string.
trait Footprint {
    fn footprint(&self) -> u64;
}

impl Footprint for i32 {
    fn footprint(&self) -> u64 {
        std::mem::size_of::<Option<i32>>() as u64
    }
}
impl Footprint for i64 {
    fn footprint(&self) -> u64 {
        std::mem::size_of::<Option<i64>>() as u64
    }
}
impl Footprint for f64 {
    fn footprint(&self) -> u64 {
        std::mem::size_of::<Option<f64>>() as u64
    }
}
impl Footprint for bool {
    fn footprint(&self) -> u64 {
        std::mem::size_of::<Option<bool>>() as u64
    }
}
impl Footprint for String {
    fn footprint(&self) -> u64 {
        (std::mem::size_of::<Option<String>>() + self.len()) as u64
    }
}

impl From<parquet::errors::ParquetError> for ReadErr {
    fn from(e: parquet::errors::ParquetError) -> Self {
        ReadErr::Parquet(e)
    }
}

/// Reads `n` rows of one column chunk into `out`, nulls where the definition level is
/// below the column's maximum, in batches of [`BATCH`] records, each value's
/// [`Footprint`] taken from `budget` (an error when it runs out).
fn read_column(
    cr: ColumnReader,
    max_def: i16,
    n: usize,
    out: &mut Values,
    budget: &mut u64,
) -> Result<(), ReadErr> {
    macro_rules! get {
        ($r:expr, $out:expr, $conv:expr) => {{
            let mut defs: Vec<i16> = Vec::new();
            let mut vals = Vec::new();
            let mut got = 0;
            while got < n {
                defs.clear();
                vals.clear();
                let (recs, _, _) = $r.read_records(
                    (n - got).min(BATCH),
                    if max_def > 0 { Some(&mut defs) } else { None },
                    None,
                    &mut vals,
                )?;
                if recs == 0 {
                    break;
                }
                let base = $out.len();
                let mut it = vals.drain(..);
                for k in 0..recs {
                    let present = max_def == 0 || defs.get(k).copied().unwrap_or(0) >= max_def;
                    if present {
                        let Some(v) = it.next() else {
                            return Err(ReadErr::Value(
                                got + k,
                                "fewer values than definition levels".to_string(),
                            ));
                        };
                        let v = $conv(v).map_err(|m: String| ReadErr::Value(base + k, m))?;
                        *budget = budget.checked_sub(v.footprint()).ok_or(ReadErr::Limit)?;
                        $out.push(Some(v));
                    } else {
                        $out.push(None);
                    }
                }
                got += recs;
            }
            if got != n {
                return Err(ReadErr::Value(
                    got,
                    format!("the column chunk ends after {got} of {n} rows"),
                ));
            }
        }};
    }
    match (cr, out) {
        (ColumnReader::Int32ColumnReader(mut r), Values::I32(o)) => get!(r, o, ok),
        (ColumnReader::Int64ColumnReader(mut r), Values::I64(o)) => get!(r, o, ok),
        (ColumnReader::DoubleColumnReader(mut r), Values::F64(o)) => get!(r, o, ok),
        (ColumnReader::BoolColumnReader(mut r), Values::Bool(o)) => get!(r, o, ok),
        (ColumnReader::ByteArrayColumnReader(mut r), Values::Str(o)) => {
            get!(r, o, |b: ByteArray| {
                b.as_utf8().map(str::to_string).map_err(|_| "not UTF-8 text".to_string())
            });
        }
        _ => return Err(ReadErr::Value(0, "column type differs from the schema".to_string())),
    }
    Ok(())
}
