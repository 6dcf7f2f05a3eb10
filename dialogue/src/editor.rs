//! The second source format: a visual editor's export (the article's `FromConfiguration`).
//!
//! An editor keeps nodes in a list and links them by a numeric id, because writers rename nodes
//! and links must survive that. A reference carries the id and, as a fallback, the name:
//! `{"Id": 7, "Name": "Accepted"}`. The id wins; a name is used when the id is missing or stale.
//! Files in this format end in `.editor.json`:
//!
//! ```json
//! {
//!   "Format": "banter-editor/1",
//!   "Speaker": "Mara",
//!   "FirstNode": { "Id": 1 },
//!   "Nodes": [
//!     { "Id": 1, "Name": "Greet", "Text": "Hello.",
//!       "Responses": [ { "Text": "Hi.", "Next": { "Id": 2, "Name": "Bye" } } ] },
//!     { "Id": 2, "Name": "Bye", "Text": "See you.", "Close": true }
//!   ]
//! }
//! ```
//!
//! It parses into the same [`ConversationFile`] as the canonical format, so the same
//! conversation written in either builds an equal graph.

use std::collections::BTreeMap;

use crate::canonical::{CHOICE, LINE_ID, SHARED};
use crate::diagnostic::{Diagnostic, Problem};
use crate::json::{Decoder, Json};
use crate::model::{ConversationFile, Exit, Next, Node, NodeEntry, Response};

/// The only editor export version this loader reads.
pub const FORMAT: &str = "banter-editor/1";
/// File name suffix that selects this format.
pub const SUFFIX: &str = ".editor.json";

const TOP_FIELDS: [&str; 5] = ["Format", "Speaker", "FirstNode", "Shared", "Nodes"];
const NODE_FIELDS: [&str; 11] = [
    "LineId",
    "Direction",
    "Id",
    "Name",
    "Text",
    "Responses",
    "Next",
    "Close",
    "Actions",
    "Conditions",
    "Choice",
];
const RESPONSE_FIELDS: [&str; 5] = ["LineId", "Text", "Actions", "Next", "Conditions"];

/// A link as the editor wrote it, before resolution.
struct Reference {
    id: Option<i64>,
    name: Option<String>,
}

/// Parses one editor export.
pub fn parse_editor_export(
    file: &str,
    bytes: &[u8],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ConversationFile> {
    let root = match crate::json::parse_bytes(file, bytes) {
        Ok(root) => root,
        Err(d) => {
            diagnostics.push(*d);
            return None;
        }
    };
    let mut d = Decoder { file, diagnostics };
    let Json::Object(top) = &root else {
        d.wrong_type(None, "(top level)", "an editor export object", &root);
        return None;
    };
    let field = |key: &str| top.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    d.unknown_fields(None, None, top.iter().map(|(k, _)| k), |k| {
        TOP_FIELDS.contains(&k)
    });
    match field("Format").map(|v| d.string(None, "Format", v)) {
        Some(Some(format)) if format == FORMAT => {}
        Some(Some(other)) => {
            d.error(None, "Format", Problem::UnknownFormat(other));
            return None;
        }
        Some(None) => return None,
        None => {
            d.error(None, "Format", Problem::MissingField("Format"));
            return None;
        }
    }
    let speaker = field("Speaker").and_then(|v| d.ident(None, "Speaker", "Speaker", v));
    let shared = field(SHARED).and_then(|v| d.choice(None, SHARED, v));
    let Some(Json::Array(raw_nodes)) = field("Nodes") else {
        match field("Nodes") {
            Some(other) => d.wrong_type(None, "Nodes", "an array of nodes", other),
            None => d.error(None, "Nodes", Problem::MissingField("Nodes")),
        }
        return None;
    };

    // Pass one: every node's id and name, so references can point forward.
    let mut names_by_id: BTreeMap<i64, String> = BTreeMap::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, raw) in raw_nodes.iter().enumerate() {
        let at = format!("Nodes[{}]", i + 1);
        let Json::Object(fields) = raw else {
            d.wrong_type(None, &at, "a node object", raw);
            continue;
        };
        let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let name = match get("Name") {
            Some(v) => d.ident(None, &format!("{at}.Name"), "Name", v),
            None => {
                d.error(None, &format!("{at}.Name"), Problem::MissingField("Name"));
                None
            }
        };
        let id = match get("Id") {
            Some(Json::Number(n)) if n.as_i64().is_some() => n.as_i64(),
            Some(other) => {
                d.wrong_type(None, &format!("{at}.Id"), "a whole number", other);
                None
            }
            None => {
                d.error(None, &format!("{at}.Id"), Problem::MissingField("Id"));
                None
            }
        };
        if let Some(name) = &name {
            if !names.insert(name.clone()) {
                d.error(Some(name), "Name", Problem::Duplicate(name.clone()));
            }
            if let Some(id) = id
                && names_by_id.insert(id, name.clone()).is_some()
            {
                d.error(Some(name), "Id", Problem::Duplicate(id.to_string()));
            }
        }
    }

    let resolver = Resolver {
        names_by_id: &names_by_id,
        names: &names,
    };
    let first_node = field("FirstNode").and_then(|v| {
        let reference = decode_reference(&mut d, None, "FirstNode", v)?;
        Some(resolver.resolve(&mut d, None, "FirstNode", reference))
    });

    // Pass two: decode each node with its references resolved to names.
    let mut nodes = BTreeMap::new();
    for raw in raw_nodes {
        let Json::Object(fields) = raw else { continue };
        let Some(Json::String(name)) = fields.iter().find(|(k, _)| k == "Name").map(|(_, v)| v)
        else {
            continue;
        };
        if let Some(node) = decode_node(&mut d, &resolver, name, fields) {
            nodes.insert(name.clone(), NodeEntry::Whole(node));
        }
    }
    Some(ConversationFile {
        file: file.to_owned(),
        first_node,
        speaker,
        shared,
        nodes,
    })
}

struct Resolver<'a> {
    names_by_id: &'a BTreeMap<i64, String>,
    names: &'a std::collections::BTreeSet<String>,
}

impl Resolver<'_> {
    /// The id wins; the name is the fallback. An unresolvable reference keeps a name so the
    /// graph build reports it as dangling, exactly as a bad `NextNode` in the canonical format.
    fn resolve(
        &self,
        d: &mut Decoder<'_>,
        node: Option<&str>,
        field: &str,
        r: Reference,
    ) -> String {
        if let Some(name) = r.id.and_then(|id| self.names_by_id.get(&id)) {
            return name.clone();
        }
        match (r.id, r.name) {
            (Some(id), Some(name)) if self.names.contains(&name) => {
                let mut w = Diagnostic::warning(
                    d.file,
                    Problem::StaleEditorId {
                        id,
                        name: name.clone(),
                    },
                )
                .field(field);
                if let Some(node) = node {
                    w = w.node(node);
                }
                d.diagnostics.push(w);
                name
            }
            (_, Some(name)) => name,
            (Some(id), None) => format!("#{id}"),
            (None, None) => String::new(),
        }
    }
}

fn decode_reference(
    d: &mut Decoder<'_>,
    node: Option<&str>,
    field: &str,
    v: &Json,
) -> Option<Reference> {
    let Json::Object(fields) = v else {
        d.wrong_type(node, field, "a reference object with Id and/or Name", v);
        return None;
    };
    let mut reference = Reference {
        id: None,
        name: None,
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("Id", Json::Number(n)) if n.as_i64().is_some() => reference.id = n.as_i64(),
            ("Id", other) => d.wrong_type(node, &format!("{field}.Id"), "a whole number", other),
            ("Name", v) => reference.name = d.ident(node, &format!("{field}.Name"), "Name", v),
            (other, _) => d.error(
                node,
                &format!("{field}.{other}"),
                Problem::UnknownField(other.to_owned()),
            ),
        }
    }
    if reference.id.is_none() && reference.name.is_none() {
        d.error(node, field, Problem::MissingField("Id"));
        return None;
    }
    Some(reference)
}

/// `Next`: one reference, or a non-empty list tried in order.
fn decode_next(
    d: &mut Decoder<'_>,
    resolver: &Resolver<'_>,
    node: Option<&str>,
    field: &str,
    v: &Json,
) -> Option<Next> {
    match v {
        Json::Array(items) if !items.is_empty() => {
            let mut names = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = format!("{field}[{}]", i + 1);
                let reference = decode_reference(d, node, &at, item)?;
                names.push(resolver.resolve(d, node, &at, reference));
            }
            Some(Next::FirstOf(names))
        }
        Json::Array(_) => {
            d.error(node, field, Problem::EmptyValue("Next"));
            None
        }
        other => {
            let reference = decode_reference(d, node, field, other)?;
            Some(Next::One(resolver.resolve(d, node, field, reference)))
        }
    }
}

fn decode_node(
    d: &mut Decoder<'_>,
    resolver: &Resolver<'_>,
    name: &str,
    fields: &[(String, Json)],
) -> Option<Node> {
    let node = Some(name);
    let errors_before = d.diagnostics.iter().filter(|x| x.is_error()).count();
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    d.unknown_fields(node, None, fields.iter().map(|(k, _)| k), |k| {
        NODE_FIELDS.contains(&k)
    });
    let line = field(LINE_ID).and_then(|v| d.ident(node, LINE_ID, LINE_ID, v));
    let direction = field("Direction").and_then(|v| d.string(node, "Direction", v));
    let text = field("Text")
        .and_then(|v| d.string(node, "Text", v))
        .unwrap_or_default();
    let actions = field("Actions")
        .map(|v| d.actions(node, "Actions", v))
        .unwrap_or_default();
    let conditions = field("Conditions").and_then(|v| d.conditions(node, "Conditions", v));
    let choice = field(CHOICE).and_then(|v| d.choice(node, CHOICE, v));
    let close = field("Close")
        .and_then(|v| d.boolean(node, "Close", v))
        .unwrap_or(false);
    let present: Vec<&str> = [
        field("Responses").map(|_| "Responses"),
        field("Next").map(|_| "Next"),
        close.then_some("Close"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let exit = if present.len() > 1 {
        d.error(node, present[1], Problem::SeveralExits(present.join(", ")));
        Exit::End
    } else if let Some(v) = field("Responses") {
        match v {
            Json::Array(items) => Exit::Responses(
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| decode_response(d, resolver, name, i + 1, item))
                    .collect(),
            ),
            other => {
                d.wrong_type(node, "Responses", "an array of responses", other);
                Exit::End
            }
        }
    } else if let Some(v) = field("Next") {
        decode_next(d, resolver, node, "Next", v).map_or(Exit::End, Exit::Next)
    } else if close {
        Exit::Close
    } else {
        Exit::End
    };
    let errors_after = d.diagnostics.iter().filter(|x| x.is_error()).count();
    (errors_after == errors_before).then_some(Node {
        line,
        text,
        direction,
        voice: None,
        exit,
        actions,
        conditions,
        choice,
        // The editor format has no `Once`, `Disabled` or groups yet: canonical JSON only.
        once: false,
    })
}

fn decode_response(
    d: &mut Decoder<'_>,
    resolver: &Resolver<'_>,
    name: &str,
    index: usize,
    v: &Json,
) -> Option<Response> {
    let node = Some(name);
    let at = format!("Responses[{index}]");
    let Json::Object(fields) = v else {
        d.wrong_type(node, &at, "a response object", v);
        return None;
    };
    d.unknown_fields(node, Some(&at), fields.iter().map(|(k, _)| k), |k| {
        RESPONSE_FIELDS.contains(&k)
    });
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    Some(Response {
        line: field(LINE_ID).and_then(|v| d.ident(node, &format!("{at}.{LINE_ID}"), LINE_ID, v)),
        text: field("Text")
            .and_then(|v| d.string(node, &format!("{at}.Text"), v))
            .unwrap_or_default(),
        actions: field("Actions")
            .map(|v| d.actions(node, &format!("{at}.Actions"), v))
            .unwrap_or_default(),
        next: field("Next").and_then(|v| decode_next(d, resolver, node, &format!("{at}.Next"), v)),
        conditions: field("Conditions")
            .and_then(|v| d.conditions(node, &format!("{at}.Conditions"), v)),
        once: false,
        disabled: None,
        disabled_line: None,
    })
}
