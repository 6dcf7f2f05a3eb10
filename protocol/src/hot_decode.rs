//! The decoder's fast path for the messages a conversation is made of (`choose`, `advance`,
//! `action`, `talk`, `move`, `close`), written with `type` first as every client in this
//! repository writes them.
//!
//! serde's internally tagged enum ([`ClientMessage`]'s derive) cannot know the variant before it
//! has seen `type`, so it first buffers every field of the frame into its own tree of values,
//! allocating a string per field, and then decodes the variant from that tree. When `type` is
//! the first key, the variant is known at once and its fields are decoded straight from the
//! text. Anything else (another key first, an escaped key or tag, another message, anything
//! malformed) returns `None`, and [`ClientMessage::decode`] takes the general path, which then
//! also words every error: this path accepts a subset of what the general path accepts, with
//! the same result (`hot_path_agrees_with_serde` and the `frame_decoder` fuzz target check it).

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer as _, MapAccess, Visitor};

use crate::action::ActionType;
use crate::messages::{ClientMessage, Position};

// One struct per variant on the path, with the variant's fields and serde attributes (the
// enum's `deny_unknown_fields` included), so that decoding one is decoding the variant.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Move {
    #[serde(default)]
    id: Option<u64>,
    position: Position,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Talk {
    #[serde(default)]
    id: Option<u64>,
    npc: String,
    #[serde(default)]
    instance: Option<String>,
    #[serde(default)]
    cached: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    #[serde(default)]
    id: Option<u64>,
    node: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Choose {
    #[serde(default)]
    id: Option<u64>,
    response: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Action {
    #[serde(default)]
    id: Option<u64>,
    action: ActionType,
    payload: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Close {
    #[serde(default)]
    id: Option<u64>,
}

/// The message, if `text` is one of the path's messages with `type` first and decodes as it.
pub(crate) fn decode(text: &str) -> Option<ClientMessage> {
    let mut de = serde_json::Deserializer::from_str(text);
    let message = de.deserialize_map(TypeFirst).ok()??;
    de.end().ok()?;
    Some(message)
}

/// Reads the first key; when it is `type`, the variant's fields from the rest of the map.
struct TypeFirst;

impl<'de> Visitor<'de> for TypeFirst {
    type Value = Option<ClientMessage>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a client message with `type` first")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Borrowed: a key or tag with an escape in it fails here and takes the general path.
        if map.next_key::<&'de str>()? != Some("type") {
            return Ok(None);
        }
        let tag: &'de str = map.next_value()?;
        let fields = MapAccessDeserializer::new(map);
        Ok(Some(match tag {
            "choose" => {
                let Choose { id, response } = Choose::deserialize(fields)?;
                ClientMessage::Choose { id, response }
            }
            "advance" => {
                let Advance { id, node } = Advance::deserialize(fields)?;
                ClientMessage::Advance { id, node }
            }
            "action" => {
                let Action {
                    id,
                    action,
                    payload,
                } = Action::deserialize(fields)?;
                ClientMessage::Action {
                    id,
                    action,
                    payload,
                }
            }
            "talk" => {
                let Talk {
                    id,
                    npc,
                    instance,
                    cached,
                } = Talk::deserialize(fields)?;
                ClientMessage::Talk {
                    id,
                    npc,
                    instance,
                    cached,
                }
            }
            "move" => {
                let Move { id, position } = Move::deserialize(fields)?;
                ClientMessage::Move { id, position }
            }
            "close" => {
                let Close { id } = Close::deserialize(fields)?;
                ClientMessage::Close { id }
            }
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the general path (the enum's own derive) makes of `text`.
    fn general(text: &str) -> Option<ClientMessage> {
        serde_json::from_str(text).ok()
    }

    #[test]
    fn conversation_messages_written_type_first_take_the_path() {
        for text in [
            r#"{"type":"choose","id":7,"response":"Marisol_Gossip_r1"}"#,
            r#"{"type":"advance","node":"Marisol_GossipMore","id":null}"#,
            r#"{"type":"action","id":9,"action":"OpenShop","payload":"SaltyHookRods"}"#,
            r#"{"type":"talk","npc":"Marisol","instance":"marisol","cached":"abc"}"#,
            r#"{"type":"talk","id":1,"npc":"Marisol"}"#,
            r#"{"type":"move","id":2,"position":[-6,3.5,-14e0]}"#,
            r#" { "type" : "close" } "#,
            r#"{"type":"choose","response":"caf\u00e9 \"r\""}"#,
        ] {
            let hot = decode(text);
            assert!(hot.is_some(), "{text} takes the path");
            assert_eq!(hot, general(text), "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        for text in [
            // Another key first, another message, an escaped tag or key.
            r#"{"id":7,"type":"choose","response":"r"}"#,
            r#"{"type":"set_afk","afk":true}"#,
            r#"{"type":"ch\u006fose","response":"r"}"#,
            r#"{"\u0074ype":"choose","response":"r"}"#,
            // Malformed: the general path words the error.
            r#"{"type":"choose","response":"r","extra":1}"#,
            r#"{"type":"choose","response":"r","type":"choose"}"#,
            r#"{"type":"choose","response":"r","response":"s"}"#,
            r#"{"type":"choose","id":-1,"response":"r"}"#,
            r#"{"type":"choose","id":1.5,"response":"r"}"#,
            r#"{"type":"choose"}"#,
            r#"{"type":"action","action":"Nope","payload":""}"#,
            r#"{"type":"move","position":[1,2]}"#,
            r#"{"type":"close"} x"#,
            r#"{"type":"close""#,
            r#"{"type":7}"#,
            "[]",
            "",
        ] {
            assert_eq!(decode(text), None, "{text}");
        }
    }

    /// A JSON value for a field: what a client could put there, right or wrong.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            (0u64..u64::MAX).prop_map(|n| n.to_string()),
            Just("18446744073709551616".to_owned()),
            Just("-1".to_owned()),
            Just("1.0".to_owned()),
            Just("[1,2,3]".to_owned()),
            Just("[1,2]".to_owned()),
            Just("{}".to_owned()),
            "[a-zA-Z_é\"\\\\]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
            Just(r#""OpenShop""#.to_owned()),
            Just(r#""AcceptQuest""#.to_owned()),
        ]
    }

    fn key() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "type", "id", "response", "node", "action", "payload", "npc", "instance", "cached",
            "position", "afk", "other",
        ])
    }

    fn tag() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "choose", "advance", "action", "talk", "move", "close", "set_afk", "nope",
        ])
        .prop_map(|t| format!("{t:?}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Whatever the path accepts, the general path accepts as the same message.
        #[test]
        fn hot_path_agrees_with_serde(
            tag in tag(),
            fields in prop::collection::vec((key(), value()), 0..5),
        ) {
            let mut text = format!(r#"{{"type":{tag}"#);
            for (key, value) in &fields {
                text.push_str(&format!(r#","{key}":{value}"#));
            }
            text.push('}');
            let (hot, general) = (decode(&text), general(&text));
            if hot.is_some() {
                prop_assert_eq!(&hot, &general, "{}", text);
            }
            // And it is a path: a message of its kinds the general path takes, it takes too.
            let on_path = ["choose", "advance", "action", "talk", "move", "close"]
                .iter()
                .any(|t| tag == format!("{t:?}"));
            if on_path && general.is_some() {
                prop_assert!(hot.is_some(), "{} left the path", text);
            }
        }
    }
}
