//! The encoder's fast path for the answers a conversation step is mostly made of: the `ack`
//! and the `effect` of an accepted action (with the player's profile). Written straight into one
//! `String`, byte for byte what serde's derive writes for the same message (proptests below:
//! `an_ack_is_written_as_serde_writes_it`, `an_effect_is_written_as_serde_writes_it`), without
//! serde's internally tagged machinery, which cost 3,700 instructions an effect (BENCHMARKS.md,
//! issue 37). Every other message goes through serde.

use crate::ActionType;
use crate::messages::{Effect, Profile, VarValue};

/// About what an `effect` frame takes: its keys, an action name, an id, a profile.
const EFFECT_BYTES: usize = 160;

/// `{"type":"ack","id":ID}`.
pub(crate) fn ack(id: u64) -> String {
    const HEAD: &str = r#"{"type":"ack","id":"#;
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(id);
    let mut json = String::with_capacity(HEAD.len() + digits.len() + 1);
    json.push_str(HEAD);
    json.push_str(digits);
    json.push('}');
    json
}

/// `{"type":"effect","action":…,"effect":{"kind":…,…},"profile":{…}}`, fields in declaration
/// order as serde writes them.
pub(crate) fn effect(action: ActionType, effect: &Effect, profile: &Profile) -> String {
    let mut out = String::with_capacity(EFFECT_BYTES);
    out.push_str(r#"{"type":"effect","action":"#);
    // An action type's name is a Rust identifier: nothing in it to escape.
    push_str(&mut out, action.name());
    out.push_str(r#","effect":{"kind":"#);
    match effect {
        Effect::QuestAccepted { quest, objectives } => {
            out.push_str(r#""quest_accepted","quest":"#);
            push_str(&mut out, quest);
            out.push_str(r#","objectives":["#);
            for (i, objective) in objectives.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str(&mut out, objective);
            }
            out.push(']');
        }
        Effect::QuestChecked { quest, done } => {
            out.push_str(r#""quest_checked","quest":"#);
            push_str(&mut out, quest);
            out.push_str(if *done {
                r#","done":true"#
            } else {
                r#","done":false"#
            });
        }
        Effect::QuestCompleted {
            quest,
            coins,
            experience,
        } => {
            out.push_str(r#""quest_completed","quest":"#);
            push_str(&mut out, quest);
            push_int(&mut out, r#","coins":"#, *coins);
            push_int(&mut out, r#","experience":"#, *experience);
        }
        Effect::ObjectiveAdvanced {
            quest,
            objective,
            progress,
            target,
        } => {
            out.push_str(r#""objective_advanced","quest":"#);
            push_str(&mut out, quest);
            out.push_str(r#","objective":"#);
            push_str(&mut out, objective);
            push_int(&mut out, r#","progress":"#, *progress);
            push_int(&mut out, r#","target":"#, *target);
        }
        Effect::QuestTracked { quest } => {
            string_field(&mut out, r#""quest_tracked","quest":"#, quest)
        }
        Effect::OpenShop { shop } => string_field(&mut out, r#""open_shop","shop":"#, shop),
        Effect::PlayCutscene { scene } => {
            string_field(&mut out, r#""play_cutscene","scene":"#, scene)
        }
        Effect::ChooseRideBoat { quest } => {
            string_field(&mut out, r#""choose_ride_boat","quest":"#, quest)
        }
        Effect::OpenSellMenu {} => out.push_str(r#""open_sell_menu""#),
        Effect::VariableSet { variable, value } => {
            out.push_str(r#""variable_set","variable":"#);
            push_str(&mut out, variable);
            out.push_str(r#","value":"#);
            match value {
                VarValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                VarValue::Int(n) => push_int(&mut out, "", *n),
                VarValue::Text(text) => push_str(&mut out, text),
            }
        }
    }
    push_int(&mut out, r#"},"profile":{"coins":"#, profile.coins);
    push_int(&mut out, r#","experience":"#, profile.experience);
    push_int(&mut out, r#","tutorial_stage":"#, profile.tutorial_stage);
    if let Some(quest) = &profile.tracked_quest {
        out.push_str(r#","tracked_quest":"#);
        push_str(&mut out, quest);
    }
    out.push_str("}}");
    out
}

/// `head` (the kind and a key), then the string.
fn string_field(out: &mut String, head: &str, text: &str) {
    out.push_str(head);
    push_str(out, text);
}

/// `key` then the integer's digits.
fn push_int(out: &mut String, key: &str, n: impl itoa::Integer) {
    out.push_str(key);
    out.push_str(itoa::Buffer::new().format(n));
}

/// A JSON string as serde_json writes it: `"` and `\` escaped with a backslash, the control
/// characters as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), everything else as is.
fn push_str(out: &mut String, text: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, b) in text.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte escaped is ASCII, so `plain..i` lies on character boundaries.
        out.push_str(&text[plain..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        plain = i + 1;
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::messages::ServerMessage;

    fn serde(message: &ServerMessage) -> String {
        serde_json::to_string(message).unwrap_or_default()
    }

    /// Text with everything serde treats specially: quotes, backslashes, every control
    /// character, non-ASCII.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z_]{0,12}",
            "[\\u{0}-\\u{20}\"\\\\/a\\u{7f}é😀]{0,8}",
            any::<String>(),
        ]
    }

    fn effect_strategy() -> impl Strategy<Value = Effect> {
        prop_oneof![
            (text(), prop::collection::vec(text(), 0..3))
                .prop_map(|(quest, objectives)| Effect::QuestAccepted { quest, objectives }),
            (text(), any::<bool>()).prop_map(|(quest, done)| Effect::QuestChecked { quest, done }),
            (text(), any::<i64>(), any::<i64>()).prop_map(|(quest, coins, experience)| {
                Effect::QuestCompleted {
                    quest,
                    coins,
                    experience,
                }
            }),
            (text(), text(), any::<u32>(), any::<u32>()).prop_map(
                |(quest, objective, progress, target)| Effect::ObjectiveAdvanced {
                    quest,
                    objective,
                    progress,
                    target,
                }
            ),
            text().prop_map(|quest| Effect::QuestTracked { quest }),
            text().prop_map(|shop| Effect::OpenShop { shop }),
            Just(Effect::OpenSellMenu {}),
            text().prop_map(|scene| Effect::PlayCutscene { scene }),
            text().prop_map(|quest| Effect::ChooseRideBoat { quest }),
            (
                text(),
                prop_oneof![
                    any::<bool>().prop_map(VarValue::Bool),
                    any::<i64>().prop_map(VarValue::Int),
                    text().prop_map(VarValue::Text),
                ]
            )
                .prop_map(|(variable, value)| Effect::VariableSet { variable, value }),
        ]
    }

    proptest! {
        #[test]
        fn an_ack_is_written_as_serde_writes_it(id in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()]) {
            let ack = ServerMessage::Ack { id };
            prop_assert_eq!(ack.to_json(), serde(&ack));
        }

        #[test]
        fn an_effect_is_written_as_serde_writes_it(
            action in prop::sample::select(ActionType::ALL.to_vec()),
            effect in effect_strategy(),
            coins in any::<i64>(),
            experience in any::<i64>(),
            tutorial_stage in any::<i64>(),
            tracked_quest in prop::option::of(text()),
        ) {
            let message = ServerMessage::Effect {
                action,
                effect,
                profile: Profile { coins, experience, tutorial_stage, tracked_quest },
            };
            prop_assert_eq!(message.to_json(), serde(&message));
        }
    }
}
