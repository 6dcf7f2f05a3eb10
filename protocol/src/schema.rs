//! JSON Schemas of the wire messages, generated from the Rust types so they cannot drift.
//!
//! `docs/schema/` holds the committed copies; a test regenerates them and fails when they are
//! out of date (run it with `BANTER_BLESS=1` to rewrite them).
//!
//! The server never sends `null`: an optional field without a value is left out (every
//! `Option` of a server message is skipped when `None`). Its schema says so: `null` is not
//! among the types of any of its properties. A client may still send `null` for an optional
//! field, which means the same as leaving it out, so the client schema keeps it.

use serde_json::Value;

use crate::messages::{ClientMessage, ServerMessage};

/// `(file name, pretty JSON)` for each direction of the protocol.
pub fn json_schemas() -> Vec<(&'static str, String)> {
    let render = |schema: schemars::Schema| {
        let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        text.push('\n');
        text
    };
    let mut server = schemars::schema_for!(ServerMessage);
    if let Some(map) = server.as_object_mut() {
        map.values_mut().for_each(without_null);
    }
    vec![
        (
            "client-message.schema.json",
            render(schemars::schema_for!(ClientMessage)),
        ),
        ("server-message.schema.json", render(server)),
    ]
}

/// Removes `null` from every `type` list and every `anyOf`/`oneOf` in `schema`.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".to_owned(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(options)) = map.get_mut(key) {
                    options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
                    if options.len() == 1 {
                        let only = options.remove(0);
                        map.remove(key);
                        if let Value::Object(inner) = only {
                            map.extend(inner);
                        }
                    }
                }
            }
            for value in map.values_mut() {
                without_null(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}
