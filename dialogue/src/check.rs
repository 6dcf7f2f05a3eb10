//! Content checks. (being written)
