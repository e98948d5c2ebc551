//! One kernel through the whole pipeline.
