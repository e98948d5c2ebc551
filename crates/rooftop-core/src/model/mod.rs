//! LLM step budget (being written).
