//! SQLite access shared by the database readers ([`super::nsys_sqlite`],
//! [`super::rocpd`]): opening a database read-only (a gzipped one from memory), listing
//! its tables and columns, and reading values leniently with errors that name the
//! table, the row and the column.
//!
//! Invariants: nothing is ever written to the file (read-only open; a gzipped database
//! is deserialized read-only); a column a query needs but the table lacks is selected
//! as `NULL`, so exports of different tool versions read with one query; SQLite's own
//! failures on damaged files ("file is not a database", "database disk image is
//! malformed") become [`CounterError`]s, never panics.

use super::CounterError;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeSet;
use std::path::Path;

/// The 16 bytes every SQLite 3 database file starts with (sqlite.org/fileformat.html
/// §1.3).
pub(crate) const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether `bytes` start like a SQLite 3 database.
pub(crate) fn is_sqlite(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// A database error as one sentence about the file.
pub(crate) fn db_error(path: &Path, what: &str, e: &rusqlite::Error) -> CounterError {
    CounterError::new(
        path,
        format!("{what}: SQLite says \"{e}\" (the database is damaged or not complete)"),
    )
}

/// Opens `path` read-only; a gzipped database is decompressed into memory.
pub(crate) fn open(path: &Path) -> Result<Connection, CounterError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = if crate::compressed::is_gzip_file(path) {
        let bytes =
            crate::compressed::read_bytes(path).map_err(|e| CounterError::new(path, e.reason()))?;
        if !is_sqlite(&bytes) {
            return Err(CounterError::new(
                path,
                "the decompressed file is not a SQLite database (it does not start with \
                 `SQLite format 3`)",
            ));
        }
        let mut c = Connection::open_in_memory()
            .map_err(|e| db_error(path, "cannot open an in-memory database", &e))?;
        c.deserialize_read_exact(rusqlite::MAIN_DB, &bytes[..], bytes.len(), true)
            .map_err(|e| db_error(path, "cannot load the decompressed database", &e))?;
        c
    } else {
        Connection::open_with_flags(path, flags)
            .map_err(|e| db_error(path, "cannot open the database", &e))?
    };
    // Fail early and in one place on a file that is not a database at all.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
        .map_err(|e| db_error(path, "cannot read the schema", &e))?;
    bound_work(&mut conn, path)?;
    Ok(conn)
}

/// SQLite virtual-machine steps between two calls of the progress handler.
const STEPS_PER_CHECK: i32 = 100_000;
/// SQLite steps one database read may take per row the row limit allows: far more than
/// reading and sorting a real table takes (a few hundred), far less than never ending.
pub(crate) const STEPS_PER_ROW: u64 = 2_000;

/// Bounds the work SQLite does for one read to [`STEPS_PER_ROW`] × the row limit
/// (SQLite's progress handler interrupts the statement past it). A view that yields rows
/// without end is stopped by the row count in [`for_each_row`]; but a statement that
/// must see every row before it yields one (a sort, an aggregate, a materialised
/// recursive view) never yields: this stops it.
fn bound_work(conn: &mut Connection, path: &Path) -> Result<(), CounterError> {
    let checks = row_cap().saturating_mul(STEPS_PER_ROW) / STEPS_PER_CHECK.unsigned_abs() as u64;
    let mut calls = 0u64;
    conn.progress_handler(
        STEPS_PER_CHECK,
        Some(move || {
            calls += 1;
            calls > checks
        }),
    )
    .map_err(|e| db_error(path, "cannot set a work limit", &e))
}

/// Names of the tables and views.
pub(crate) fn tables(path: &Path, conn: &Connection) -> Result<BTreeSet<String>, CounterError> {
    let err = |e: rusqlite::Error| db_error(path, "cannot list the tables", &e);
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        .map_err(err)?;
    let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
    let mut out = BTreeSet::new();
    for r in rows {
        out.insert(r.map_err(err)?);
    }
    Ok(out)
}

/// Column names of a table or view (empty when it does not exist).
pub(crate) fn columns(
    path: &Path,
    conn: &Connection,
    table: &str,
) -> Result<BTreeSet<String>, CounterError> {
    let err =
        |e: rusqlite::Error| db_error(path, &format!("cannot read the columns of {table}"), &e);
    let sql = format!("SELECT name FROM pragma_table_info('{}')", table.replace('\'', "''"));
    let mut st = conn.prepare(&sql).map_err(err)?;
    let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
    let mut out = BTreeSet::new();
    for r in rows {
        out.insert(r.map_err(err)?);
    }
    Ok(out)
}

/// `"col"` when the table has it, else `NULL`, aliased to the column's name.
pub(crate) fn col_or_null(have: &BTreeSet<String>, col: &str) -> String {
    if have.contains(col) {
        format!("\"{col}\"")
    } else {
        format!("NULL AS \"{col}\"")
    }
}

/// A value read from one cell, with where it came from for errors.
pub(crate) struct Cell<'a> {
    pub path: &'a Path,
    pub table: &'a str,
    pub row: u64,
    pub column: &'a str,
    pub value: ValueRef<'a>,
}

impl<'a> Cell<'a> {
    fn bad(&self, expected: &str) -> CounterError {
        let found = match self.value {
            ValueRef::Null => "NULL".to_string(),
            ValueRef::Integer(i) => format!("the integer {i}"),
            ValueRef::Real(r) => format!("the number {r}"),
            ValueRef::Text(t) => {
                let s = String::from_utf8_lossy(t);
                let s: String = s.chars().take(40).collect();
                format!("the text `{s}`")
            }
            ValueRef::Blob(b) => format!("a blob of {} bytes", b.len()),
        };
        CounterError::new(
            self.path,
            format!(
                "table {}, row {}, column `{}`: expected {expected}, found {found}",
                self.table, self.row, self.column
            ),
        )
    }

    /// An integer; NULL is `None`; a whole real or numeric text is accepted.
    pub fn int(&self) -> Result<Option<i64>, CounterError> {
        match self.value {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(i) => Ok(Some(i)),
            ValueRef::Real(r) if r.is_finite() && r.fract() == 0.0 && r.abs() < 9.2e18 => {
                Ok(Some(r as i64))
            }
            ValueRef::Text(t) => match std::str::from_utf8(t).ok().map(str::trim) {
                Some("") => Ok(None),
                Some(s) => s.parse().map(Some).map_err(|_| self.bad("an integer")),
                None => Err(self.bad("an integer")),
            },
            _ => Err(self.bad("an integer")),
        }
    }

    /// A non-negative integer.
    pub fn uint(&self) -> Result<Option<u64>, CounterError> {
        match self.int()? {
            Some(v) => u64::try_from(v).map(Some).map_err(|_| self.bad("a non-negative integer")),
            None => Ok(None),
        }
    }

    /// A finite number.
    pub fn num(&self) -> Result<Option<f64>, CounterError> {
        match self.value {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(i) => Ok(Some(i as f64)),
            ValueRef::Real(r) if r.is_finite() => Ok(Some(r)),
            ValueRef::Text(t) => match std::str::from_utf8(t).ok().map(str::trim) {
                Some("") => Ok(None),
                Some(s) => s
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .map(Some)
                    .ok_or_else(|| self.bad("a number")),
                None => Err(self.bad("a number")),
            },
            _ => Err(self.bad("a finite number")),
        }
    }

    /// Text borrowed from the row where it is text (numbers are written out; NULL is
    /// `None`).
    pub fn text_ref(&self) -> Result<Option<std::borrow::Cow<'a, str>>, CounterError> {
        match self.value {
            ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t))),
            _ => Ok(self.text()?.map(std::borrow::Cow::Owned)),
        }
    }

    /// Text (numbers are written out; NULL is `None`).
    pub fn text(&self) -> Result<Option<String>, CounterError> {
        match self.value {
            ValueRef::Null => Ok(None),
            ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
            ValueRef::Integer(i) => Ok(Some(i.to_string())),
            ValueRef::Real(r) => Ok(Some(r.to_string())),
            ValueRef::Blob(_) => Err(self.bad("text")),
        }
    }
}

/// One row of a query, read by column index with errors naming the cell.
pub(crate) struct RowRef<'r, 's> {
    path: &'r Path,
    table: &'r str,
    /// 1-based row number in the query's order.
    pub n: u64,
    row: &'r rusqlite::Row<'s>,
}

impl RowRef<'_, '_> {
    fn cell<'c>(&'c self, i: usize, column: &'c str) -> Result<Cell<'c>, CounterError> {
        let value = self.row.get_ref(i).map_err(|e| {
            db_error(self.path, &format!("cannot read table {}, row {}", self.table, self.n), &e)
        })?;
        Ok(Cell { path: self.path, table: self.table, row: self.n, column, value })
    }

    pub fn int(&self, i: usize, column: &str) -> Result<Option<i64>, CounterError> {
        self.cell(i, column)?.int()
    }

    /// The cell as SQLite holds it (its storage class and value), without conversion.
    pub fn value(&self, i: usize) -> Result<ValueRef<'_>, CounterError> {
        Ok(self.cell(i, "")?.value)
    }

    pub fn uint(&self, i: usize, column: &str) -> Result<Option<u64>, CounterError> {
        self.cell(i, column)?.uint()
    }

    pub fn num(&self, i: usize, column: &str) -> Result<Option<f64>, CounterError> {
        self.cell(i, column)?.num()
    }

    pub fn text(&self, i: usize, column: &str) -> Result<Option<String>, CounterError> {
        self.cell(i, column)?.text()
    }

    /// [`Cell::text_ref`]: text borrowed from the row.
    pub fn text_ref<'c>(
        &'c self,
        i: usize,
        column: &'c str,
    ) -> Result<Option<std::borrow::Cow<'c, str>>, CounterError> {
        self.cell(i, column)?.text_ref()
    }

    /// The cell as SQLite's `ORDER BY` ranks it, when that is an integer's rank:
    /// `(false, 0)` for NULL (first), `(true, v)` for the integer `v`; `None` for a real,
    /// text or blob (whose rank among integers this does not model) or a cell that
    /// cannot be read.
    pub fn int_order_key(&self, i: usize) -> Option<(bool, i64)> {
        match self.row.get_ref(i).ok()? {
            ValueRef::Null => Some((false, 0)),
            ValueRef::Integer(v) => Some((true, v)),
            _ => None,
        }
    }
}

/// The most rows a query should ask SQLite for: one past the row limit, so that
/// [`for_each_row`] can tell a table over the limit. A query that must see every row
/// before it yields one (`ORDER BY`) selects from a subquery with this `LIMIT`, or a view
/// without end would keep SQLite sorting forever.
pub(crate) fn row_cap() -> u64 {
    rooftop_core::limits::Limit::DbRows.value().saturating_add(1)
}

/// Runs `sql` (over `table`, named in errors) and calls `each` with every row; returns
/// the number of rows.
pub(crate) fn for_each_row<F>(
    path: &Path,
    conn: &Connection,
    table: &str,
    sql: &str,
    mut each: F,
) -> Result<u64, CounterError>
where
    F: FnMut(&RowRef<'_, '_>) -> Result<(), CounterError>,
{
    let limit = rooftop_core::limits::Limit::DbRows;
    let err = |e: rusqlite::Error| {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            let found = format!(
                "table or view {table}: SQLite did more than {STEPS_PER_ROW} steps per row the \
                 limit allows without finishing (a view without end?)"
            );
            return CounterError::new(path, limit.exceeded_here(&found));
        }
        db_error(path, &format!("cannot read table {table}"), &e)
    };
    let mut st = conn.prepare(sql).map_err(err)?;
    let mut rows = st.query([]).map_err(err)?;
    let mut n = 0u64;
    // A view can yield rows without end: stop at the limit.
    let max = limit.value();
    while let Some(row) = rows.next().map_err(err)? {
        n += 1;
        if n > max {
            let found = format!("table or view {table}: more than {max} rows");
            return Err(CounterError::new(path, limit.exceeded_here(&found)));
        }
        each(&RowRef { path, table, n, row })?;
    }
    Ok(n)
}

/// What [`read_then_order`] found.
pub(crate) enum ReadOrder {
    /// The rows came in the sorted order.
    Sorted,
    /// The caller's `j`-th row in sorted order is its `order[j]`-th as read
    /// ([`permute`]).
    Reorder(Vec<usize>),
    /// A key is not an integer or NULL, or a row failed: the caller drops what `each`
    /// kept and reads the query with `ORDER BY` instead, so that the result, and an
    /// error's row number, are those of the sorted query.
    ReadSorted,
}

impl ReadOrder {
    /// Puts `v`, one value per row as read, in the sorted order (nothing to do unless
    /// [`ReadOrder::Reorder`]).
    pub(crate) fn apply<T>(&self, v: &mut [T]) {
        if let ReadOrder::Reorder(order) = self {
            permute(v, order);
        }
    }
}

/// Runs `sql` (rows in the table's order) and calls `each` with every row, then gives
/// the order `ORDER BY` column `key` would have given them: a stable sort by the key,
/// NULL first, as SQLite's sorter orders integers and NULL. Sorting here saves SQLite's
/// sorter a pass over every row of a large table.
pub(crate) fn read_then_order<F>(
    path: &Path,
    conn: &Connection,
    table: &str,
    sql: &str,
    key: usize,
    mut each: F,
) -> ReadOrder
where
    F: FnMut(&RowRef<'_, '_>) -> Result<(), CounterError>,
{
    let mut keys: Vec<((bool, i64), u32)> = Vec::new();
    let read = for_each_row(path, conn, table, sql, |r| {
        let (Some(k), Ok(i)) = (r.int_order_key(key), u32::try_from(keys.len())) else {
            // Stops the read; the sorted query reads the table instead.
            return Err(CounterError::new(path, "a key that is not an integer"));
        };
        each(r)?;
        keys.push((k, i));
        Ok(())
    });
    if read.is_err() {
        return ReadOrder::ReadSorted;
    }
    if keys.is_sorted() {
        return ReadOrder::Sorted;
    }
    // (key, row) pairs are distinct: an unstable sort of them is a stable sort of the
    // keys.
    keys.sort_unstable();
    ReadOrder::Reorder(keys.iter().map(|&(_, i)| i as usize).collect())
}

/// Reorders `v` in place so that `v[j]` becomes the old `v[order[j]]` (`order` is a
/// permutation of `0..v.len()`), one cycle at a time: no second copy of `v`.
pub(crate) fn permute<T>(v: &mut [T], order: &[usize]) {
    let mut done = vec![false; order.len()];
    for i in 0..order.len() {
        if done[i] {
            continue;
        }
        let mut j = i;
        loop {
            done[j] = true;
            let k = order[j];
            if k == i {
                break;
            }
            v.swap(j, k);
            j = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_follows_cycles() {
        // order[j] = where the new j-th element comes from: two cycles (0 2 4) (1 3)
        // and a fixed point 5.
        let mut v = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        permute(&mut v, &[2, 3, 4, 1, 0, 5]);
        assert_eq!(v, vec!['c', 'd', 'e', 'b', 'a', 'f']);
        let mut e: Vec<u8> = Vec::new();
        permute(&mut e, &[]);
        assert!(e.is_empty());
    }
}
