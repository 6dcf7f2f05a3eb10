//! Export to dot and mermaid. (being written)
