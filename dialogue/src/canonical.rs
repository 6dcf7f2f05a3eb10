//! The canonical source format: a JSON object whose keys are node names (article section 2).
//!
//! ```json
//! {
//!   "FirstNode": "Greet",
//!   "Speaker": "Mara",
//!   "Greet": {
//!     "Text": "Word is a Winterspire angler landed something rare.",
//!     "Responses": [
//!       { "Text": "Let's go see it.", "NextNode": "Accepted",
//!         "Actions": [ { "Type": "AcceptQuest", "QuestId": "MarksColdCall" } ] },
//!       { "Text": "Maybe later.", "NextNode": "Declined" }
//!     ]
//!   }
//! }
//! ```
//!
//! Field names are the article's, so content converts one to one. `Patch: true` marks a layer
//! node that changes only the fields it names. Three keys of the top level are not nodes:
//! `FirstNode`, `Speaker` and `Shared` (a party walks the conversation together; a node's
//! `Choice` overrides its rule for that node's responses).

use crate::diagnostic::{Diagnostic, Problem};
use crate::json::{Decoder, Json};
use crate::model::{
    ChoiceSpec, ConversationFile, Exit, Group, MAX_GROUP_CANDIDATES, MAX_WEIGHT, Next, Node,
    NodeEntry, NodePatch, Pick, Response, VoiceLine,
};

/// Reserved keys of a conversation object; every other key is a node.
pub const FIRST_NODE: &str = "FirstNode";
pub const SPEAKER: &str = "Speaker";
/// `Shared`: the conversation is walked by a party together (docs/CONTENT.md, "Shared
/// conversations").
pub const SHARED: &str = "Shared";
/// A node's `Choice`: its own ballot rule in a shared conversation.
pub const CHOICE: &str = "Choice";

/// Parses one canonical conversation file. Problems are pushed to `diagnostics`; a node with an
/// error is left out, and the rest of the conversation is still returned.
pub fn parse_conversation(
    file: &str,
    bytes: &[u8],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ConversationFile> {
    parse_conversation_with_limit(file, bytes, crate::json::MAX_FILE_BYTES, diagnostics)
}

/// [`parse_conversation`] with the caller's size limit instead of the file limit.
pub fn parse_conversation_with_limit(
    file: &str,
    bytes: &[u8],
    limit: u64,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ConversationFile> {
    let root = match crate::json::parse_bytes_with_limit(file, bytes, limit) {
        Ok(root) => root,
        Err(d) => {
            diagnostics.push(*d);
            return None;
        }
    };
    let mut decoder = Decoder { file, diagnostics };
    decode_conversation(&mut decoder, &root)
}

fn decode_conversation(d: &mut Decoder<'_>, root: &Json) -> Option<ConversationFile> {
    let Json::Object(entries) = root else {
        d.diagnostics.push(Diagnostic::error(
            d.file,
            Problem::WrongType {
                expected: "an object of named nodes",
                found: root.kind(),
            },
        ));
        return None;
    };
    let mut out = ConversationFile {
        file: d.file.to_owned(),
        ..ConversationFile::default()
    };
    for (key, value) in entries {
        match key.as_str() {
            FIRST_NODE => out.first_node = d.ident(None, FIRST_NODE, "FirstNode", value),
            SPEAKER => out.speaker = d.ident(None, SPEAKER, "Speaker", value),
            SHARED => out.shared = d.choice(None, SHARED, value),
            name => {
                if let Some(node) = decode_node(d, name, value) {
                    out.nodes.insert(name.to_owned(), node);
                }
            }
        }
    }
    Some(out)
}

/// The field holding a node's or a response's stable line id.
pub const LINE_ID: &str = "LineId";
/// The field holding a greyed-out response's reason's stable line id.
pub const DISABLED_LINE_ID: &str = "DisabledLineId";

const NODE_FIELDS: [&str; 12] = [
    "Once",
    "LineId",
    "Text",
    "Direction",
    "Voice",
    "Responses",
    "NextNode",
    "Close",
    "Actions",
    "Conditions",
    "Choice",
    "Patch",
];
const RESPONSE_FIELDS: [&str; 8] = [
    "LineId",
    "Text",
    "Actions",
    "NextNode",
    "Conditions",
    "Once",
    "Disabled",
    "DisabledLineId",
];

fn decode_node(d: &mut Decoder<'_>, name: &str, value: &Json) -> Option<NodeEntry> {
    let node = Some(name);
    let Json::Object(fields) = value else {
        d.wrong_type(node, name, "a node object", value);
        return None;
    };
    let errors_before = d.diagnostics.len();
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    d.unknown_fields(node, None, fields.iter().map(|(k, _)| k), |k| {
        NODE_FIELDS.contains(&k)
    });
    let patch = field("Patch")
        .and_then(|v| d.boolean(node, "Patch", v))
        .unwrap_or(false);
    let line = field(LINE_ID).and_then(|v| d.ident(node, LINE_ID, LINE_ID, v));
    let text = field("Text").and_then(|v| d.string(node, "Text", v));
    let direction = field("Direction").and_then(|v| d.string(node, "Direction", v));
    let voice = field("Voice").and_then(|v| decode_voice(d, node, v));
    let actions = field("Actions").map(|v| d.actions(node, "Actions", v));
    let conditions = field("Conditions").and_then(|v| d.conditions(node, "Conditions", v));
    let choice = field(CHOICE).and_then(|v| d.choice(node, CHOICE, v));
    let once = field("Once").and_then(|v| d.boolean(node, "Once", v));
    let exit = decode_exit(
        d,
        node,
        field("Responses"),
        field("NextNode"),
        field("Close"),
    );
    if d.diagnostics.len() > errors_before {
        return None;
    }
    Some(if patch {
        NodeEntry::Patch(NodePatch {
            line,
            text,
            direction,
            exit,
            actions,
            conditions,
            choice,
            once,
        })
    } else {
        NodeEntry::Whole(Node {
            line,
            text: text.unwrap_or_default(),
            direction,
            voice,
            exit: exit.unwrap_or_default(),
            actions: actions.unwrap_or_default(),
            conditions,
            choice,
            once: once.unwrap_or(false),
        })
    })
}

/// `Voice`: `{ "Clip": "voice/ja/line-3f9a0c11d2.wav", "Ms": 2350 }`.
fn decode_voice(d: &mut Decoder<'_>, node: Option<&str>, v: &Json) -> Option<VoiceLine> {
    let Json::Object(fields) = v else {
        d.wrong_type(node, "Voice", "an object with Clip and Ms", v);
        return None;
    };
    let mut clip = None;
    let mut millis = None;
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("Clip", Json::String(path)) if !path.is_empty() => clip = Some(path.clone()),
            ("Ms", Json::Number(n)) if n.as_u64().is_some() => millis = n.as_u64(),
            ("Clip", other) => d.wrong_type(node, "Voice.Clip", "a clip path", other),
            ("Ms", other) => d.wrong_type(node, "Voice.Ms", "whole milliseconds", other),
            (other, _) => d.error(
                node,
                &format!("Voice.{other}"),
                Problem::UnknownField(other.to_owned()),
            ),
        }
    }
    match (clip, millis) {
        (Some(clip), Some(millis)) => Some(VoiceLine { clip, millis }),
        _ => {
            d.error(
                node,
                "Voice",
                Problem::EmptyValue("Voice.Clip and Voice.Ms"),
            );
            None
        }
    }
}

/// The node's exit; `None` when no exit field is present (a patch then keeps the base's exit).
fn decode_exit(
    d: &mut Decoder<'_>,
    node: Option<&str>,
    responses: Option<&Json>,
    next: Option<&Json>,
    close: Option<&Json>,
) -> Option<Exit> {
    // `Close: false` is the same as no Close at all; it is not an exit.
    let close = close.and_then(|v| d.boolean(node, "Close", v));
    let present: Vec<&str> = [
        responses.map(|_| "Responses"),
        next.map(|_| "NextNode"),
        (close == Some(true)).then_some("Close"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if present.len() > 1 {
        d.error(node, present[1], Problem::SeveralExits(present.join(", ")));
        return None;
    }
    if let Some(v) = responses {
        let Json::Array(items) = v else {
            d.wrong_type(node, "Responses", "an array of responses", v);
            return None;
        };
        let responses = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| decode_response(d, node, i + 1, item))
            .collect();
        return Some(Exit::Responses(responses));
    }
    if let Some(v) = next {
        return decode_next(d, node, "NextNode", v).map(Exit::Next);
    }
    match close {
        Some(true) => Some(Exit::Close),
        Some(false) => Some(Exit::End),
        None => None,
    }
}

/// `NextNode`: one node name, a non-empty list tried in order, or a group.
pub(crate) fn decode_next(
    d: &mut Decoder<'_>,
    node: Option<&str>,
    field: &str,
    v: &Json,
) -> Option<Next> {
    match v {
        Json::String(_) => d.ident(node, field, "NextNode", v).map(Next::One),
        Json::Object(fields) => decode_group(d, node, field, fields).map(Next::Group),
        Json::Array(items) if !items.is_empty() => {
            let names: Vec<String> = items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    d.ident(node, &format!("{field}[{}]", i + 1), "NextNode", item)
                })
                .collect();
            (names.len() == items.len()).then_some(Next::FirstOf(names))
        }
        Json::Array(_) => {
            d.error(node, field, Problem::EmptyValue("NextNode"));
            None
        }
        other => {
            d.wrong_type(
                node,
                field,
                "a node name, a list of node names or a group",
                other,
            );
            None
        }
    }
}

/// A group: `{ "Pick": ..., "Among": [name | {"Node": name, "Weight": n}], "Fallback": name }`.
fn decode_group(
    d: &mut Decoder<'_>,
    node: Option<&str>,
    field: &str,
    fields: &[(String, Json)],
) -> Option<Group> {
    let errors_before = d.diagnostics.len();
    let at = |key: &str| format!("{field}.{key}");
    d.unknown_fields(node, Some(field), fields.iter().map(|(k, _)| k), |k| {
        ["Pick", "Among", "Fallback"].contains(&k)
    });
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let pick = match get("Pick") {
        None => {
            d.error(node, &at("Pick"), Problem::MissingField("Pick"));
            None
        }
        Some(Json::String(name)) => {
            let pick = Pick::ALL.into_iter().find(|p| p.name() == name);
            if pick.is_none() {
                d.error(
                    node,
                    &at("Pick"),
                    Problem::BadGroup(format!(
                        "unknown Pick `{name}` (First, MostSpecific, LeastRecent, Weighted)"
                    )),
                );
            }
            pick
        }
        Some(other) => {
            d.wrong_type(node, &at("Pick"), "a pick rule's name", other);
            None
        }
    };
    let mut among = Vec::new();
    let mut weights = Vec::new();
    match get("Among") {
        None => d.error(node, &at("Among"), Problem::MissingField("Among")),
        Some(Json::Array(items)) if items.is_empty() || items.len() > MAX_GROUP_CANDIDATES => {
            d.error(
                node,
                &at("Among"),
                Problem::BadGroup(format!(
                    "a group has 1 to {MAX_GROUP_CANDIDATES} candidates, found {}",
                    items.len()
                )),
            );
        }
        Some(Json::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let item_at = format!("{}[{}]", at("Among"), i + 1);
                match item {
                    Json::Object(candidate) => {
                        d.unknown_fields(
                            node,
                            Some(&item_at),
                            candidate.iter().map(|(k, _)| k),
                            |k| k == "Node" || k == "Weight",
                        );
                        let get =
                            |key: &str| candidate.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                        let name = match get("Node") {
                            Some(v) => d.ident(node, &format!("{item_at}.Node"), "Node", v),
                            None => {
                                d.error(node, &item_at, Problem::MissingField("Node"));
                                None
                            }
                        };
                        let weight = match get("Weight") {
                            None => None,
                            Some(Json::Number(n))
                                if n.as_u64()
                                    .is_some_and(|w| (1..=u64::from(MAX_WEIGHT)).contains(&w)) =>
                            {
                                n.as_u64().map(|w| w as u32)
                            }
                            Some(other) => {
                                d.wrong_type(
                                    node,
                                    &format!("{item_at}.Weight"),
                                    "a whole number from 1 to 1000",
                                    other,
                                );
                                None
                            }
                        };
                        if let Some(name) = name {
                            among.push(name);
                            weights.push(weight);
                        }
                    }
                    other => {
                        if let Some(name) = d.ident(node, &item_at, "NextNode", other) {
                            among.push(name);
                            weights.push(None);
                        }
                    }
                }
            }
        }
        Some(other) => d.wrong_type(node, &at("Among"), "a list of candidates", other),
    }
    let fallback = get("Fallback").and_then(|v| d.ident(node, &at("Fallback"), "Fallback", v));
    if d.diagnostics.len() > errors_before {
        return None;
    }
    Some(Group {
        pick: pick?,
        among,
        weights,
        fallback,
    })
}

fn decode_response(
    d: &mut Decoder<'_>,
    node: Option<&str>,
    index: usize,
    v: &Json,
) -> Option<Response> {
    let at = format!("Responses[{index}]");
    let Json::Object(fields) = v else {
        d.wrong_type(node, &at, "a response object", v);
        return None;
    };
    let errors_before = d.diagnostics.len();
    d.unknown_fields(node, Some(&at), fields.iter().map(|(k, _)| k), |k| {
        RESPONSE_FIELDS.contains(&k)
    });
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let line = field(LINE_ID).and_then(|v| d.ident(node, &format!("{at}.{LINE_ID}"), LINE_ID, v));
    let text = field("Text")
        .and_then(|v| d.string(node, &format!("{at}.Text"), v))
        .unwrap_or_default();
    let actions = field("Actions")
        .map(|v| d.actions(node, &format!("{at}.Actions"), v))
        .unwrap_or_default();
    let next = field("NextNode").and_then(|v| decode_next(d, node, &format!("{at}.NextNode"), v));
    let conditions =
        field("Conditions").and_then(|v| d.conditions(node, &format!("{at}.Conditions"), v));
    let once = field("Once")
        .and_then(|v| d.boolean(node, &format!("{at}.Once"), v))
        .unwrap_or(false);
    let disabled = field("Disabled").and_then(|v| d.string(node, &format!("{at}.Disabled"), v));
    let disabled_line = field(DISABLED_LINE_ID).and_then(|v| {
        d.ident(
            node,
            &format!("{at}.{DISABLED_LINE_ID}"),
            DISABLED_LINE_ID,
            v,
        )
    });
    (d.diagnostics.len() == errors_before).then_some(Response {
        line,
        text,
        actions,
        next,
        conditions,
        once,
        disabled,
        disabled_line,
    })
}

/// Writes a merged conversation in the canonical format, so a client can build exactly the
/// server's graph from what the server sends it. `parse(to_json(c))` has the same nodes as `c`.
pub fn to_json(conversation: &crate::model::Conversation) -> String {
    use serde_json::{Map, Value};
    let mut root = Map::new();
    if let Some(first) = &conversation.first_node {
        root.insert(FIRST_NODE.into(), Value::String(first.clone()));
    }
    if let Some(speaker) = &conversation.speaker {
        root.insert(SPEAKER.into(), Value::String(speaker.clone()));
    }
    if let Some(shared) = &conversation.shared {
        root.insert(SHARED.into(), choice_json(shared));
    }
    for (name, node) in &conversation.nodes {
        let mut fields = Map::new();
        if let Some(line) = &node.line {
            fields.insert(LINE_ID.into(), Value::String(line.clone()));
        }
        fields.insert("Text".into(), Value::String(node.text.clone()));
        if let Some(voice) = &node.voice {
            let mut v = Map::new();
            v.insert("Clip".into(), Value::String(voice.clip.clone()));
            v.insert("Ms".into(), Value::from(voice.millis));
            fields.insert("Voice".into(), Value::Object(v));
        }
        if !node.actions.is_empty() {
            fields.insert("Actions".into(), actions_json(&node.actions));
        }
        if let Some(c) = &node.conditions {
            fields.insert("Conditions".into(), Value::String(c.clone()));
        }
        if let Some(choice) = &node.choice {
            fields.insert(CHOICE.into(), choice_json(choice));
        }
        if node.once {
            fields.insert("Once".into(), Value::Bool(true));
        }
        match &node.exit {
            Exit::End => {}
            Exit::Close => {
                fields.insert("Close".into(), Value::Bool(true));
            }
            Exit::Next(next) => {
                fields.insert("NextNode".into(), next_json(next));
            }
            Exit::Responses(responses) => {
                let list = responses
                    .iter()
                    .map(|r| {
                        let mut f = Map::new();
                        if let Some(line) = &r.line {
                            f.insert(LINE_ID.into(), Value::String(line.clone()));
                        }
                        f.insert("Text".into(), Value::String(r.text.clone()));
                        if !r.actions.is_empty() {
                            f.insert("Actions".into(), actions_json(&r.actions));
                        }
                        if let Some(next) = &r.next {
                            f.insert("NextNode".into(), next_json(next));
                        }
                        if let Some(c) = &r.conditions {
                            f.insert("Conditions".into(), Value::String(c.clone()));
                        }
                        if r.once {
                            f.insert("Once".into(), Value::Bool(true));
                        }
                        if let Some(reason) = &r.disabled {
                            f.insert("Disabled".into(), Value::String(reason.clone()));
                        }
                        if let Some(line) = &r.disabled_line {
                            f.insert(DISABLED_LINE_ID.into(), Value::String(line.clone()));
                        }
                        Value::Object(f)
                    })
                    .collect();
                fields.insert("Responses".into(), Value::Array(list));
            }
        }
        root.insert(name.clone(), Value::Object(fields));
    }
    Value::Object(root).to_string()
}

/// `Shared` or `Choice` as written: only the keys the content states (a client fills in the
/// defaults, docs/CONTENT.md).
pub fn choice_json(spec: &ChoiceSpec) -> serde_json::Value {
    use serde_json::{Map, Value};
    let mut f = Map::new();
    if let Some(mode) = spec.mode {
        f.insert("Mode".into(), Value::String(<&str>::from(mode).to_owned()));
    }
    if let Some(secs) = spec.time_limit {
        f.insert("TimeLimit".into(), Value::from(secs));
    }
    if let Some(tie) = spec.tie {
        f.insert("Tie".into(), Value::String(<&str>::from(tie).to_owned()));
    }
    Value::Object(f)
}

fn next_json(next: &Next) -> serde_json::Value {
    use serde_json::Value;
    match next {
        Next::One(name) => Value::String(name.clone()),
        Next::FirstOf(names) => Value::Array(names.iter().cloned().map(Value::String).collect()),
        Next::Group(group) => {
            let mut f = serde_json::Map::new();
            f.insert("Pick".into(), Value::String(group.pick.name().to_owned()));
            let among = group
                .among
                .iter()
                .zip(&group.weights)
                .map(|(name, weight)| match weight {
                    None => Value::String(name.clone()),
                    Some(w) => serde_json::json!({ "Node": name, "Weight": w }),
                })
                .collect();
            f.insert("Among".into(), Value::Array(among));
            if let Some(fallback) = &group.fallback {
                f.insert("Fallback".into(), Value::String(fallback.clone()));
            }
            Value::Object(f)
        }
    }
}

/// An action as content writes it (`{"Type": "AcceptQuest", "QuestId": "..."}`).
pub fn action_json(action: &banter_protocol::Action) -> serde_json::Value {
    match actions_json(std::slice::from_ref(action)) {
        serde_json::Value::Array(mut list) if list.len() == 1 => list.remove(0),
        other => other,
    }
}

fn actions_json(actions: &[banter_protocol::Action]) -> serde_json::Value {
    use banter_protocol::{FieldKind, FieldRef, ObjectiveAmount};
    use serde_json::{Map, Value};
    let list = actions
        .iter()
        .map(|action| {
            let mut f = Map::new();
            f.insert(
                "Type".into(),
                Value::String(action.action_type().name().to_owned()),
            );
            // Keys and kinds come from the action's declaration (banter-protocol's action.rs);
            // what content may leave out is left out.
            action.for_each_field(|spec, value| match value {
                FieldRef::Text(text) | FieldRef::Maybe(Some(text)) => {
                    // A target content left out is empty; an identifier is written as it is.
                    if !(text.is_empty() && spec.kind == FieldKind::Target) {
                        f.insert(spec.key().into(), Value::String(text.to_owned()));
                    }
                }
                FieldRef::Maybe(None) | FieldRef::Amount(None) => {}
                FieldRef::Amount(Some(ObjectiveAmount { amount, island })) => {
                    if let (Some(island), Some(key)) = (island, spec.keys.get(1)) {
                        f.insert((*key).into(), Value::String(island.clone()));
                    }
                    f.insert(spec.key().into(), Value::from(*amount));
                }
            });
            Value::Object(f)
        })
        .collect();
    Value::Array(list)
}
