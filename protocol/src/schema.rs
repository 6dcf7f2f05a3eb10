//! JSON Schemas of the wire messages, generated from the Rust types so they cannot drift.
//!
//! `docs/schema/` holds the committed copies; a test regenerates them and fails when they are
//! out of date (run it with `BANTER_BLESS=1` to rewrite them).

use crate::messages::{ClientMessage, ServerMessage};

/// `(file name, pretty JSON)` for each direction of the protocol.
pub fn json_schemas() -> Vec<(&'static str, String)> {
    let render = |schema: schemars::Schema| {
        let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        text.push('\n');
        text
    };
    vec![
        (
            "client-message.schema.json",
            render(schemars::schema_for!(ClientMessage)),
        ),
        (
            "server-message.schema.json",
            render(schemars::schema_for!(ServerMessage)),
        ),
    ]
}
