//! The parameters of a table row as TraceLens prints them ([`Params`], [`ParamValue`]).

use super::*;

// ---------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------

/// One parameter value of a table row.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A shape, stride or per-axis list.
    Ints(Vec<i64>),
    /// Data types; `None` where the op does not state one (output of a binary op).
    Dtypes(Vec<Option<String>>),
}

impl ParamValue {
    /// The value as TraceLens prints it in its CSVs (Python `repr` of tuples, `True`,
    /// `None` as an empty cell).
    pub fn tracelens_repr(&self) -> String {
        match self {
            ParamValue::Null => String::new(),
            ParamValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Float(x) => format!("{x:?}"),
            ParamValue::Str(s) => s.clone(),
            ParamValue::Ints(v) => {
                let items: Vec<String> = v.iter().map(i64::to_string).collect();
                py_tuple(&items)
            }
            ParamValue::Dtypes(v) => {
                let items: Vec<String> = v
                    .iter()
                    .map(|d| d.as_ref().map_or_else(|| "None".to_string(), |s| format!("'{s}'")))
                    .collect();
                py_tuple(&items)
            }
        }
    }
}

fn py_tuple(items: &[String]) -> String {
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

impl Serialize for ParamValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Null => s.serialize_none(),
            ParamValue::Bool(b) => s.serialize_bool(*b),
            ParamValue::Int(i) => s.serialize_i64(*i),
            ParamValue::Float(x) => s.serialize_f64(*x),
            ParamValue::Str(v) => s.serialize_str(v),
            ParamValue::Ints(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            ParamValue::Dtypes(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
        }
    }
}

/// The parameters of a row, in TraceLens's order. Serialized as a JSON object.
///
/// Names are TraceLens's `param: …` columns, except that its `dtype_A_B`,
/// `dtype_input_weight`, `dtype_in_out` and `dtype_in1_in2_out` are all `dtypes`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params(pub Vec<(&'static str, ParamValue)>);

impl Params {
    /// The value of `key`, if the row has it.
    pub fn get(&self, key: &str) -> Option<&ParamValue> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub(super) fn push(&mut self, key: &'static str, value: ParamValue) {
        self.0.push((key, value));
    }

    /// A key that identifies the parameter values (for grouping calls into rows).
    pub fn group_key(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.0 {
            let _ = write!(s, "{k}={};", v.tracelens_repr());
        }
        s
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
