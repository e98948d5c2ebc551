//! The error of an input rooftop cannot analyse, for the functions whose only answer is a
//! sentence for the user.
//!
//! Each module with more to say has its own typed error ([`crate::trace::ops::OpModelError`],
//! [`crate::roofline::RooflineError`], [`crate::analysis::AnalysisError`], ...); this one
//! carries the sentence (the file or flag, the place, what was expected) of a request
//! that cannot be answered: an unknown link, a window annotation the trace lacks, a
//! `--what-if` that matches nothing, a time out of range. It implements
//! [`std::error::Error`], so it composes with `?` under `anyhow` and `Box<dyn Error>`.

/// An input or request rooftop cannot answer, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl From<String> for InputError {
    fn from(s: String) -> InputError {
        InputError(s)
    }
}

/// The sentence itself, for callers that report errors as text.
impl From<InputError> for String {
    fn from(e: InputError) -> String {
        e.0
    }
}
