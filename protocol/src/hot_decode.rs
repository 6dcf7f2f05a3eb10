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

/// The message, if `text` is one of the path's messages with `type` first and decodes as it:
/// first by [`scan`] (the commonest steps, written plainly), then through serde.
pub(crate) fn decode(text: &str) -> Option<ClientMessage> {
    if let Some(message) = scan(text) {
        return Some(message);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let message = de.deserialize_map(TypeFirst).ok()??;
    de.end().ok()?;
    Some(message)
}

/// The four steps a conversation is mostly made of (`choose`, `advance`, `action`, `close`),
/// read byte by byte when they are written plainly: `type` first, every key once, strings
/// without escapes, an `id` that is `null` or digits with no sign, fraction, exponent or leading
/// zero. Anything else, valid or not, is `None` and goes on to serde, so this reader never has
/// to be right about a case it does not know: it accepts a subset of what serde accepts, with
/// the same result (`hot_path_agrees_with_serde`, the `frame_decoder` fuzz target).
fn scan(text: &str) -> Option<ClientMessage> {
    let mut s = Scanner { text, at: 0 };
    s.byte(b'{')?;
    if s.string()? != "type" {
        return None;
    }
    s.byte(b':')?;
    let tag = s.string()?;
    let mut id = None;
    let mut seen_id = false;
    // The variant's string fields, in the order `keys` names them.
    let mut values: [Option<&str>; 2] = [None, None];
    let keys: &[&str] = match tag {
        "choose" => &["response"],
        "advance" => &["node"],
        "action" => &["action", "payload"],
        "close" => &[],
        _ => return None,
    };
    loop {
        match s.next()? {
            b'}' => break,
            b',' => {}
            _ => return None,
        }
        let key = s.string()?;
        s.byte(b':')?;
        if key == "id" {
            if seen_id {
                return None;
            }
            seen_id = true;
            id = s.id()?;
            continue;
        }
        let slot = keys.iter().position(|k| *k == key)?;
        if values[slot].is_some() {
            return None;
        }
        values[slot] = Some(s.string()?);
    }
    s.end()?;
    Some(match (tag, values) {
        ("choose", [Some(response), _]) => ClientMessage::Choose {
            id,
            response: response.to_owned(),
        },
        ("advance", [Some(node), _]) => ClientMessage::Advance {
            id,
            node: node.to_owned(),
        },
        ("action", [Some(action), Some(payload)]) => ClientMessage::Action {
            id,
            action: action.parse::<ActionType>().ok()?,
            payload: payload.to_owned(),
        },
        ("close", _) => ClientMessage::Close { id },
        _ => return None,
    })
}

/// A cursor over a frame for [`scan`]; every method is `None` where the text is not what it
/// reads.
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not JSON whitespace, consumed.
    fn next(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes().get(self.at) {
            self.at += 1;
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
        }
        None
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// A string with no escape and no control character in it, borrowed from the frame.
    fn string(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.at;
        let mut end = start;
        loop {
            match *self.bytes().get(end)? {
                b'"' => break,
                b'\\' | 0x00..=0x1f => return None,
                _ => end += 1,
            }
        }
        self.at = end + 1;
        // The frame is a `str` and both ends are next to an ASCII quote, so they are character
        // boundaries: `get` checks just that, without reading the text again.
        self.text.get(start..end)
    }

    /// `null`, or an unsigned integer that fits in 64 bits, with nothing after its digits that
    /// would make it another number.
    fn id(&mut self) -> Option<Option<u64>> {
        match self.next()? {
            b'n' => {
                let rest = self.bytes().get(self.at..)?;
                if !rest.starts_with(b"ull") {
                    return None;
                }
                self.at += 3;
                Some(None)
            }
            first @ b'0'..=b'9' => {
                let mut value = u64::from(first - b'0');
                let start = self.at;
                while let Some(&b) = self.bytes().get(self.at) {
                    if !b.is_ascii_digit() {
                        break;
                    }
                    value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                    self.at += 1;
                }
                if first == b'0' && self.at > start {
                    return None;
                }
                match self.bytes().get(self.at) {
                    Some(b'.' | b'e' | b'E') => None,
                    _ => Some(Some(value)),
                }
            }
            _ => None,
        }
    }

    /// Nothing but whitespace left.
    fn end(&mut self) -> Option<()> {
        match self.next() {
            None => Some(()),
            Some(_) => None,
        }
    }
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
    fn plainly_written_steps_are_scanned_without_serde() {
        for text in [
            r#"{"type":"choose","id":7,"response":"Marisol_Gossip_r1"}"#,
            r#"{"type":"advance","node":"Marisol_GossipMore","id":null}"#,
            r#"{"type":"action","id":9,"action":"OpenShop","payload":"SaltyHookRods"}"#,
            r#"{"type":"action","payload":"","action":"OpenSellMenu","id":0}"#,
            r#"{"type":"choose","response":"café"}"#,
            r#"{"type":"close","id":18446744073709551615}"#,
            r#" { "type" : "close" } "#,
        ] {
            let scanned = scan(text);
            assert!(scanned.is_some(), "{text} is scanned");
            assert_eq!(scanned, general(text), "{text}");
        }
        // Valid, but left to serde: an escape, a number serde reads its own way, another message.
        for text in [
            r#"{"type":"choose","response":"caf\u00e9"}"#,
            r#"{"type":"choose","id":1e3,"response":"r"}"#,
            r#"{"type":"move","position":[1,2,3]}"#,
            r#"{"type":"talk","npc":"Marisol"}"#,
        ] {
            assert_eq!(scan(text), None, "{text}");
        }
        // Malformed: never an answer.
        for text in [
            r#"{"type":"close","id":01}"#,
            r#"{"type":"close","id":-1}"#,
            r#"{"type":"close","id":18446744073709551616}"#,
            r#"{"type":"close","id":1.5}"#,
            r#"{"type":"close","id":nul}"#,
            r#"{"type":"close","id":1,"id":2}"#,
            r#"{"type":"choose","response":"a","response":"b"}"#,
            r#"{"type":"choose"}"#,
            r#"{"type":"action","action":"Nope","payload":""}"#,
            r#"{"type":"action","action":"OpenShop"}"#,
            r#"{"type":"close"},"#,
            r#"{"type":"close""#,
            r#"{"type":"close",}"#,
            "{\"type\":\"choose\",\"response\":\"a\u{1}\"}",
        ] {
            assert_eq!(scan(text), None, "{text}");
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
            Just("0".to_owned()),
            Just("007".to_owned()),
            Just("12e1".to_owned()),
            Just("nul".to_owned()),
            Just(" 5 ".to_owned()),
            Just("[1,2,3]".to_owned()),
            Just("[1,2]".to_owned()),
            Just("{}".to_owned()),
            "[a-zA-Z_é\"\\\\]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
            "[a-z\u{1}\t]{0,3}".prop_map(|s| format!("\"{s}\"")),
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
            if let Some(scanned) = scan(&text) {
                prop_assert_eq!(Some(scanned), general.clone(), "{}", text);
            }
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
