//! The committed JSON Schemas match the Rust types.

use std::path::Path;

use banter_protocol::schema::json_schemas;

#[test]
fn committed_json_schemas_are_up_to_date() {
    for (name, fresh) in json_schemas() {
        check_or_bless(name, &fresh);
    }
}

/// `docs/schema/actions.json` is the action table of `protocol/src/action.rs`: the TypeScript
/// client generates its action tables from it (clients/typescript/scripts/gen-types.js).
#[test]
fn committed_actions_json_is_up_to_date() {
    check_or_bless("actions.json", &banter_protocol::actions_json());
}

/// Asserts `docs/schema/<name>` holds `fresh`, or writes it there with `BANTER_BLESS` set.
fn check_or_bless(name: &str, fresh: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema");
    let path = dir.join(name);
    if std::env::var_os("BANTER_BLESS").is_some() {
        std::fs::create_dir_all(&dir).expect("create docs/schema");
        std::fs::write(&path, fresh).expect("write schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is out of date; regenerate with `BANTER_BLESS=1 cargo test -p banter-protocol --test schema`",
        path.display()
    );
}

/// Every object schema with `properties` in `schema`, with its JSON pointer.
fn object_schemas<'a>(
    pointer: String,
    schema: &'a serde_json::Value,
    found: &mut Vec<(String, &'a serde_json::Value)>,
) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.contains_key("properties") {
                found.push((pointer.clone(), schema));
            }
            for (key, value) in map {
                object_schemas(format!("{pointer}/{key}"), value, found);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                object_schemas(format!("{pointer}/{i}"), value, found);
            }
        }
        _ => {}
    }
}

/// A client validates the server's messages strictly: every object the server sends (messages,
/// effects, profile, NPC, fact sheet) says `additionalProperties: false`, as every client
/// message does. Maps (`quests`, `progress`) have no `properties` and keep their open keys.
#[test]
fn every_object_in_the_server_schema_refuses_additional_properties() {
    for (name, text) in json_schemas() {
        let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
        let mut objects = Vec::new();
        object_schemas(String::new(), &schema, &mut objects);
        assert!(
            objects.len() >= 10,
            "{name}: only {} objects",
            objects.len()
        );
        for (pointer, object) in objects {
            assert_eq!(
                object.get("additionalProperties"),
                Some(&serde_json::Value::Bool(false)),
                "{name}#{pointer} allows additional properties"
            );
        }
    }
}

/// The server never sends `null` (PROTOCOL.md section 3): no property of the server schema
/// allows it, so a strict client may refuse `null` anywhere in what the server sends.
#[test]
fn the_server_schema_never_allows_null() {
    let (_, text) = json_schemas()
        .into_iter()
        .find(|(name, _)| *name == "server-message.schema.json")
        .expect("the server schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    fn walk(pointer: &str, value: &serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                assert_ne!(
                    map.get("type"),
                    Some(&serde_json::json!("null")),
                    "{pointer} is null"
                );
                if let Some(serde_json::Value::Array(types)) = map.get("type") {
                    assert!(!types.contains(&serde_json::json!("null")), "{pointer}");
                }
                for (key, inner) in map {
                    walk(&format!("{pointer}/{key}"), inner);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(&format!("{pointer}/{i}"), inner);
                }
            }
            _ => {}
        }
    }
    walk("", &schema);
}
