//! Line ids: the stable name of every line an NPC says and every response a player can choose.
//!
//! Translations, voice-over and writers' notes key a line by its id, never by its position: a
//! positional `<node>_r<i>` would move to another response when a writer inserts one above it.
//! An id is written once into the content file (`LineId`) and never changed after: reordering,
//! inserting and editing text all keep it. [`tag_file`] adds the missing ones in place, keeping
//! the file's formatting (as Yarn Spinner's line tagger does); [`check_lines`] refuses a line
//! without an id and an id used at two places.
//!
//! A greyed-out response's reason (`Disabled`) is a line of its own, keyed by its own id
//! (`DisabledLineId`): tagged, indexed, translated and checked exactly as a response's `Text`
//! and `LineId` are.
//!
//! Line ids carry text only, never structure: nothing in the walk, the payloads or the
//! reachable set reads them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use crate::canonical::{DISABLED_LINE_ID, FIRST_NODE, LINE_ID, SHARED, SPEAKER};
use crate::content::Content;
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{Conversation, Exit};

/// The prefix of every id [`derive_id`] makes.
pub const ID_PREFIX: &str = "line:";

/// The prefix of a bark line's id in string tables: `bark:` and its catalog id.
pub const BARK_PREFIX: &str = "bark:";

/// The [`Line::speaker`] of a response's greyed-out reason (`Disabled`): text the player reads
/// on a greyed button, that nobody says.
pub const GREYED_OUT: &str = "Player (greyed-out reason)";

/// FNV-1a, 64 bits: stable across machines and releases (unlike `std`'s hasher), and enough to
/// name lines; ids are checked for clashes where they are made.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            // A separator no text contains, so ("ab", "c") and ("a", "bc") differ.
            hash ^= 0x1f;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        for byte in part.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    // MurmurHash3's finalizer: FNV alone changes only the low digits for a change in the last
    // byte, and `…_r1`, `…_r2` would get ids a translator could mistake for one another.
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// A line id made from `parts` (`line:` and 10 hex digits): the same parts give the same id.
pub fn derive_id(parts: &[&str]) -> String {
    format!("{ID_PREFIX}{:010x}", fnv1a(parts) >> 24)
}

/// The hash of a line's source text that a translation records, so that a translation of an
/// older text is found stale (8 hex digits).
pub fn source_hash(text: &str) -> String {
    format!("{:08x}", fnv1a(&[text]) >> 32)
}

/// Where a line is written: the file its final version came from, its node, and for a
/// response its 1-based index (and whether the line is that response's greyed-out reason).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineSite {
    pub file: String,
    pub node: String,
    pub response: Option<usize>,
    /// The response's `Disabled` reason, not its `Text` (only with `response`).
    pub disabled: bool,
}

impl LineSite {
    /// The field a diagnostic names: `LineId`, `Responses[i].LineId` or
    /// `Responses[i].DisabledLineId`.
    pub fn field(&self) -> String {
        match (self.response, self.disabled) {
            (None, _) => LINE_ID.to_owned(),
            (Some(i), false) => format!("Responses[{i}].{LINE_ID}"),
            (Some(i), true) => format!("Responses[{i}].{DISABLED_LINE_ID}"),
        }
    }

    /// Where a string table says the line is written (`#:`): `file:node`, `file:node:response
    /// i`, or `file:node:response i:disabled` for a greyed-out reason.
    pub fn reference(&self) -> String {
        match (self.response, self.disabled) {
            (None, _) => format!("{}:{}", self.file, self.node),
            (Some(i), false) => format!("{}:{}:response {i}", self.file, self.node),
            (Some(i), true) => format!("{}:{}:response {i}:disabled", self.file, self.node),
        }
    }
}

/// One line of the content with what a translator needs around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub id: String,
    pub text: String,
    /// Who says it: the conversation's speaker for an NPC line, `Player` for a response,
    /// [`GREYED_OUT`] for a response's greyed-out reason (shown, never said).
    pub speaker: String,
    pub site: LineSite,
    /// The conversation it first appears in.
    pub conversation: String,
    /// For a response, the NPC line it answers; for a greyed-out reason, the response it
    /// explains; for an NPC line, the first line found that leads to it, if any (context for a
    /// translator, not structure).
    pub previous: Option<String>,
    /// The line id of `previous`, to read it in another locale (a recording script does).
    pub previous_id: Option<String>,
    /// The writer's note for the voice actor (`Direction`), if any.
    pub direction: Option<String>,
}

/// Every line with text, once each, in a stable order (by id), with the sites of those that
/// have no id and of ids written at more than one place.
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    pub lines: BTreeMap<String, Line>,
    /// Lines with text and no id.
    pub missing: Vec<LineSite>,
    /// An id and every distinct site it is written at (two or more).
    pub duplicates: Vec<(String, Vec<LineSite>)>,
}

impl LineIndex {
    /// Indexes the merged conversations of `content`. A node a layer adds to every
    /// conversation (the lockout layer's) is one line, found at one site.
    pub fn new(content: &Content) -> LineIndex {
        LineIndex::with_lines_where(content, |_| true).0
    }

    /// [`LineIndex::new`] with only the lines whose id `keep` accepts in `lines` (every line
    /// without an id and every duplicate id is still found), and the number of distinct ids in
    /// all. The content checks need the whole content's sites but only the lines a string table
    /// names: a full index copies every line's text and context, about 300 bytes a line, over
    /// a gigabyte at 50,000 generated NPCs.
    ///
    /// Linear in the content but for one sort, in two walks over it. The first lists every
    /// line's id with its place in the walk (40 bytes a line) and sorts that list once; each run
    /// of one id is then one line, and a duplicate if its places differ. The second walk copies
    /// out only what is wanted: the kept lines (each the first found of its id) and the sites of
    /// duplicates. Inserting into ordered maps one line at a time (before issue 22) walked trees
    /// whose nodes miss the cache at every level, and each line cost more as the content grew.
    pub fn with_lines_where(content: &Content, keep: impl Fn(&str) -> bool) -> (LineIndex, usize) {
        let bark_ids: Vec<String> = content
            .bark_lines
            .iter()
            .map(|(bark, _)| format!("{BARK_PREFIX}{bark}"))
            .collect();
        let mut files = Files::new(&content.root);
        let mut missing = Vec::new();
        let mut seen_missing = HashSet::new();
        let mut order: Vec<Key<'_>> = Vec::new();
        walk_lines(content, &bark_ids, |seq, visit| match visit.id {
            Some(id) => order.push(Key {
                prefix: prefix(id),
                id,
                seq,
            }),
            None => {
                let site = visit.site(&mut files);
                if seen_missing.insert(site.clone()) {
                    missing.push(site);
                }
            }
        });
        // Sorted by id, then by place (so within one id the first found comes first: it is the
        // line, and the first site is the one a duplicate names). The 16-byte prefix decides
        // nearly every comparison without reading the id where it lies (`line:` and ten digits
        // fit whole).
        order.sort_unstable();

        // What the second walk copies out, by place: a kept line (its slot among the lines) or
        // a duplicate's site (its group).
        let mut wanted: Vec<(u32, Want)> = Vec::new();
        let mut kept_ids: Vec<&str> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        let mut total = 0;
        let mut rest = order.as_slice();
        while let Some(first) = rest.first() {
            let run = rest.iter().take_while(|k| k.id == first.id).count();
            let (same, after) = rest.split_at(run);
            rest = after;
            total += 1;
            if keep(first.id) {
                wanted.push((first.seq, Want::Line(kept_ids.len())));
                kept_ids.push(first.id);
            }
            if same.len() > 1 {
                wanted.extend(same.iter().map(|k| (k.seq, Want::Site(groups.len()))));
                groups.push(first.id);
            }
        }
        drop(order);
        wanted.sort_unstable_by_key(|(seq, _)| *seq);

        let mut lines: Vec<Option<Line>> = Vec::new();
        lines.resize_with(kept_ids.len(), || None);
        let mut sites: Vec<Vec<LineSite>> = vec![Vec::new(); groups.len()];
        if !wanted.is_empty() {
            let mut next = 0;
            // The context of the conversation being walked, made only if a wanted line is in it.
            let mut context: Option<(&Conversation, LeadsTo<'_>)> = None;
            walk_lines(content, &bark_ids, |seq, visit| {
                while let Some(&(at, want)) = wanted.get(next) {
                    if at != seq {
                        break;
                    }
                    next += 1;
                    match want {
                        Want::Site(group) => {
                            let site = visit.site(&mut files);
                            if !sites[group].contains(&site) {
                                sites[group].push(site);
                            }
                        }
                        Want::Line(slot) => {
                            let previous = match (visit.response, visit.conversation) {
                                (Some(_), _) => Some((visit.node_line, visit.node_text)),
                                (None, Some((_, conversation))) => {
                                    let here = context
                                        .as_ref()
                                        .is_some_and(|(c, _)| std::ptr::eq(*c, conversation));
                                    if !here {
                                        context = Some((conversation, leads_to(conversation)));
                                    }
                                    context
                                        .as_ref()
                                        .and_then(|(_, before)| before.get(visit.node).copied())
                                }
                                (None, None) => None,
                            };
                            lines[slot] = Some(Line {
                                id: kept_ids[slot].to_owned(),
                                text: visit.text.to_owned(),
                                speaker: visit.speaker.to_owned(),
                                site: visit.site(&mut files),
                                conversation: visit.conversation_name.to_owned(),
                                previous: previous.map(|(_, text)| text.to_owned()),
                                previous_id: previous.and_then(|(id, _)| id).map(str::to_owned),
                                direction: visit.direction.map(str::to_owned),
                            });
                        }
                    }
                }
            });
        }
        let duplicates = groups
            .into_iter()
            .zip(sites)
            .filter(|(_, sites)| sites.len() > 1)
            .map(|(id, sites)| (id.to_owned(), sites))
            .collect();
        let index = LineIndex {
            // Sorted by id and unique already: the map is built in one pass.
            lines: lines
                .into_iter()
                .flatten()
                .map(|line| (line.id.clone(), line))
                .collect(),
            missing,
            duplicates,
        };
        (index, total)
    }
}

/// A line's id and its place in [`walk_lines`], sorted by id then place.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key<'c> {
    prefix: u128,
    id: &'c str,
    seq: u32,
}

/// What the second walk of [`LineIndex::with_lines_where`] copies out at a place.
#[derive(Clone, Copy)]
enum Want {
    /// The line of the kept id in this slot.
    Line(usize),
    /// A site of the duplicate id of this group.
    Site(usize),
}

/// One line with text, as [`walk_lines`] meets it, borrowing the content.
struct Visit<'c> {
    /// The merged conversation it is in, by name; `None` for a bark line.
    conversation: Option<(&'c str, &'c Conversation)>,
    conversation_name: &'c str,
    /// The file its final version came from, as the merged conversation names it.
    origin: &'c str,
    node: &'c str,
    /// 1-based, for a response.
    response: Option<usize>,
    /// The response's greyed-out reason, not its text.
    disabled: bool,
    id: Option<&'c str>,
    text: &'c str,
    speaker: &'c str,
    /// For a response, the line it answers, and that line's id; for a greyed-out reason, the
    /// response it explains, and that response's id.
    node_text: &'c str,
    node_line: Option<&'c str>,
    direction: Option<&'c str>,
}

impl Visit<'_> {
    fn site(&self, files: &mut Files<'_>) -> LineSite {
        LineSite {
            file: files.relative(self.origin),
            node: self.node.to_owned(),
            response: self.response,
            disabled: self.disabled,
        }
    }
}

/// Every line with text in a fixed order, numbered: conversations by name, their nodes by
/// name, each node's line then its responses (each response's text, then its greyed-out
/// reason); then the bark lines (`bark_ids` parallel to
/// `content.bark_lines`). Both walks of [`LineIndex::with_lines_where`] number alike.
fn walk_lines<'c>(
    content: &'c Content,
    bark_ids: &'c [String],
    mut visit: impl FnMut(u32, Visit<'c>),
) {
    let mut seq: u32 = 0;
    let next = |seq: &mut u32| {
        let at = *seq;
        *seq = seq.saturating_add(1);
        at
    };
    for (name, conversation) in &content.merged {
        let speaker = conversation.speaker.as_deref().unwrap_or_default();
        // Origins are keyed like the nodes, so one pass in step finds each node's file.
        let mut origins = conversation.origin.iter().peekable();
        for (node_name, node) in &conversation.nodes {
            while origins.next_if(|(n, _)| *n < node_name).is_some() {}
            let origin = origins
                .next_if(|(n, _)| *n == node_name)
                .map_or(conversation.base_file.as_str(), |(_, file)| file.as_str());
            let at = |response, id, text, speaker, direction| Visit {
                conversation: Some((name.as_str(), conversation)),
                conversation_name: name,
                origin,
                node: node_name,
                response,
                disabled: false,
                id,
                text,
                speaker,
                node_text: &node.text,
                node_line: node.line.as_deref(),
                direction,
            };
            if !node.text.is_empty() {
                visit(
                    next(&mut seq),
                    at(
                        None,
                        node.line.as_deref(),
                        &node.text,
                        speaker,
                        node.direction.as_deref(),
                    ),
                );
            }
            if let Exit::Responses(responses) = &node.exit {
                for (i, response) in responses.iter().enumerate() {
                    if !response.text.is_empty() {
                        visit(
                            next(&mut seq),
                            at(
                                Some(i + 1),
                                response.line.as_deref(),
                                &response.text,
                                "Player",
                                None,
                            ),
                        );
                    }
                    if let Some(reason) = response.disabled.as_deref().filter(|r| !r.is_empty()) {
                        visit(
                            next(&mut seq),
                            Visit {
                                disabled: true,
                                node_text: &response.text,
                                node_line: response.line.as_deref(),
                                ..at(
                                    Some(i + 1),
                                    response.disabled_line.as_deref(),
                                    reason,
                                    GREYED_OUT,
                                    None,
                                )
                            },
                        );
                    }
                }
            }
        }
    }
    // Bark lines: their catalog ids are stable already; `bark:` keeps them apart from dialogue
    // lines. The protagonist says them.
    for ((bark, text), id) in content.bark_lines.iter().zip(bark_ids) {
        if text.is_empty() {
            continue;
        }
        visit(
            next(&mut seq),
            Visit {
                conversation: None,
                conversation_name: "barks",
                origin: crate::content::BARK_CATALOG,
                node: bark,
                response: None,
                disabled: false,
                id: Some(id),
                text,
                speaker: "Player (bark)",
                node_text: "",
                node_line: None,
                direction: None,
            },
        );
    }
}

/// By node, the id (if any) and text of the first line that leads to it.
type LeadsTo<'c> = HashMap<&'c str, (Option<&'c str>, &'c str)>;

/// The id and text of the first line that leads to each node of a conversation, for context.
fn leads_to(conversation: &Conversation) -> LeadsTo<'_> {
    let mut before: LeadsTo<'_> = HashMap::new();
    for node in conversation.nodes.values() {
        if let Exit::Next(next) = &node.exit {
            for target in next.all_targets() {
                before
                    .entry(target.as_str())
                    .or_insert((node.line.as_deref(), node.text.as_str()));
            }
        }
        if let Exit::Responses(responses) = &node.exit {
            for response in responses {
                for target in response.next.iter().flat_map(|n| n.all_targets()) {
                    before
                        .entry(target.as_str())
                        .or_insert((response.line.as_deref(), response.text.as_str()));
                }
            }
        }
    }
    before
}

/// Site files relative to the content folder, each made once: a table written from `content`
/// and one written from `/srv/game/content` are the same file.
struct Files<'r> {
    root: &'r Path,
    relative: HashMap<String, String>,
}

impl<'r> Files<'r> {
    fn new(root: &'r Path) -> Self {
        Files {
            root,
            relative: HashMap::new(),
        }
    }

    fn relative(&mut self, origin: &str) -> String {
        if let Some(relative) = self.relative.get(origin) {
            return relative.clone();
        }
        let relative = Path::new(origin)
            .strip_prefix(self.root)
            .map_or_else(|_| origin.to_owned(), |p| p.display().to_string());
        self.relative.insert(origin.to_owned(), relative.clone());
        relative
    }
}

/// The first 16 bytes of `id`, big-endian and zero-padded: ordered as the ids are, up to ties
/// the whole id breaks (a shorter id and its zero-padded prefix tie; the id itself decides).
fn prefix(id: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let n = id.len().min(16);
    bytes[..n].copy_from_slice(&id.as_bytes()[..n]);
    u128::from_be_bytes(bytes)
}

/// `check-content`'s line checks: a line with text and no id, and an id at two places, are
/// errors (one diagnostic each, at the file and node that wrote it).
pub fn check_lines(content: &Content, out: &mut Vec<Diagnostic>) {
    check_line_index(content, &LineIndex::new(content), out);
}

/// [`check_lines`] on an index the caller built already (the checks build one and share it with
/// the string tables' check).
pub fn check_line_index(content: &Content, index: &LineIndex, out: &mut Vec<Diagnostic>) {
    // Sites are relative to the content folder; diagnostics name files as the loader does.
    let path = |site: &LineSite| content.root.join(&site.file).display().to_string();
    for site in &index.missing {
        out.push(
            Diagnostic::error(path(site), Problem::MissingLineId)
                .node(&site.node)
                .field(site.field()),
        );
    }
    for (id, sites) in &index.duplicates {
        let first = &sites[0];
        for site in &sites[1..] {
            out.push(
                Diagnostic::error(
                    path(site),
                    Problem::DuplicateLineId {
                        id: id.clone(),
                        first: format!("{} {}.{}", first.file, first.node, first.field()),
                    },
                )
                .node(&site.node)
                .field(site.field()),
            );
        }
    }
}

/// Why [`tag_file`] could not tag a file.
#[derive(Debug, thiserror::Error)]
pub enum TagError {
    #[error("{file}: malformed JSON at byte {offset}: {reason}")]
    Syntax {
        file: String,
        offset: usize,
        reason: &'static str,
    },
}

/// Which source format a file is in: where its nodes and responses are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Nodes are the root object's members (other than `FirstNode` and `Speaker`).
    Canonical,
    /// Nodes are the elements of the root's `Nodes` array (`.editor.json`).
    Editor,
}

impl Format {
    /// The format a content file's name says.
    pub fn of(file_name: &str) -> Format {
        if file_name.ends_with(".editor.json") {
            Format::Editor
        } else {
            Format::Canonical
        }
    }
}

/// Adds a `LineId` to every node and response of `text` that has non-empty `Text` and no
/// `LineId`, and a `DisabledLineId` to every response with a non-empty `Disabled` reason and no
/// `DisabledLineId` (right after the reason, on a line of its own when the reason is on one),
/// keeping everything else byte for byte. New ids are derived from `file`, the node and the
/// response's index (and `disabled` for a reason), and never one in `taken` (which gains them).
/// Returns the new text and how many ids were added; a file with nothing to add comes back
/// unchanged.
pub fn tag_file(
    file: &str,
    text: &str,
    format: Format,
    taken: &mut HashSet<String>,
) -> Result<(String, usize), TagError> {
    let root = scan::parse(text).map_err(|(offset, reason)| TagError::Syntax {
        file: file.to_owned(),
        offset,
        reason,
    })?;
    // Where each new id goes, by the offset it is inserted at, and the parts it is made from.
    let mut wanted: Vec<(usize, Place, Vec<String>)> = Vec::new();
    for (node, object, response) in line_objects(&root, text, format) {
        let mut parts = vec![file.to_owned(), node];
        parts.extend(response.map(|i| format!("r{i}")));
        if needs_id(text, object) {
            wanted.push((object.start + 1, Place::Open(object.start), parts.clone()));
        }
        if response.is_some()
            && let Some((key, reason)) = needs_disabled_id(text, object)
        {
            parts.push("disabled".to_owned());
            wanted.push((reason.end, Place::After(key.start), parts));
        }
    }
    if wanted.is_empty() {
        return Ok((text.to_owned(), 0));
    }
    let count = wanted.len();
    let mut out = text.to_owned();
    // From the end, so earlier offsets stay right.
    wanted.sort_by_key(|(at, _, _)| std::cmp::Reverse(*at));
    for (at, place, parts) in wanted {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let id = unique_id(&parts, taken);
        let inserted = match place {
            Place::Open(open) => insertion(text, open, &id),
            Place::After(key) => insertion_after(text, key, DISABLED_LINE_ID, &id),
        };
        out.insert_str(at, &inserted);
    }
    Ok((out, count))
}

/// Where [`tag_file`] writes a new id.
#[derive(Clone, Copy)]
enum Place {
    /// A `LineId`, first in the object whose `{` is at this offset.
    Open(usize),
    /// A `DisabledLineId`, after the member (the `Disabled` reason) whose key starts here.
    After(usize),
}

/// The line id [`derive_id`] makes from `parts`, unless `taken` has it: then the parts with a
/// counter. `taken` gains the id. The same parts, in the same order, give the same ids.
pub(crate) fn unique_id(parts: &[&str], taken: &mut HashSet<String>) -> String {
    let mut id = derive_id(parts);
    let mut salt = 0u32;
    while taken.contains(&id) {
        salt += 1;
        let salted = salt.to_string();
        let mut with_salt = parts.to_vec();
        with_salt.push(&salted);
        id = derive_id(&with_salt);
    }
    taken.insert(id.clone());
    id
}

/// Every `LineId` and `DisabledLineId` written in `text` (a file that does not parse has none).
pub fn ids_in(text: &str, format: Format) -> Vec<String> {
    let Ok(root) = scan::parse(text) else {
        return Vec::new();
    };
    line_objects(&root, text, format)
        .into_iter()
        .flat_map(|(_, object, _)| {
            [LINE_ID, DISABLED_LINE_ID]
                .into_iter()
                .filter_map(|key| object.member(text, key))
        })
        .map(|id| scan::string_at(text, id))
        .collect()
}

/// Every node object of a file and every response object under it, as (node name, object,
/// the response's 1-based index): where line ids are written, in either format.
fn line_objects<'v>(
    root: &'v scan::Value,
    text: &str,
    format: Format,
) -> Vec<(String, &'v scan::Value, Option<usize>)> {
    let nodes: Vec<(String, &scan::Value)> = match (&root.kind, format) {
        (scan::Kind::Object(members), Format::Canonical) => members
            .iter()
            .map(|(key, value)| (scan::string_at(text, key), value))
            .filter(|(name, _)| name != FIRST_NODE && name != SPEAKER && name != SHARED)
            .collect(),
        (scan::Kind::Object(_), Format::Editor) => match root.member(text, "Nodes") {
            Some(scan::Value {
                kind: scan::Kind::Array(nodes),
                ..
            }) => nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let name = node
                        .member(text, "Name")
                        .filter(|v| matches!(v.kind, scan::Kind::String))
                        .map(|v| scan::string_at(text, v))
                        .unwrap_or_else(|| format!("#{}", i + 1));
                    (name, node)
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for (name, node) in nodes {
        out.push((name.clone(), node, None));
        if let Some(scan::Value {
            kind: scan::Kind::Array(items),
            ..
        }) = node.member(text, "Responses")
        {
            for (i, response) in items.iter().enumerate() {
                out.push((name.clone(), response, Some(i + 1)));
            }
        }
    }
    out
}

/// An object with non-empty `Text` and no `LineId`.
fn needs_id(text: &str, value: &scan::Value) -> bool {
    matches!(value.kind, scan::Kind::Object(_))
        && value.member(text, LINE_ID).is_none()
        && value
            .member(text, "Text")
            .is_some_and(|t| matches!(t.kind, scan::Kind::String) && t.end - t.start > 2)
}

/// A response object with a non-empty `Disabled` reason and no `DisabledLineId`: the reason's
/// key and value.
fn needs_disabled_id<'v>(
    text: &str,
    value: &'v scan::Value,
) -> Option<(&'v scan::Value, &'v scan::Value)> {
    if value.member(text, DISABLED_LINE_ID).is_some() {
        return None;
    }
    value.entry(text, "Disabled").filter(|(_, reason)| {
        matches!(reason.kind, scan::Kind::String) && reason.end - reason.start > 2
    })
}

/// What goes right after a member whose key starts at `key`: `, "<member>": "<id>"`, on a line
/// of its own, indented like the key, when the key starts its line; on the same line otherwise.
fn insertion_after(text: &str, key: usize, member: &str, id: &str) -> String {
    let line_start = text[..key].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..key];
    if line_start > 0 && indent.bytes().all(|b| b == b' ' || b == b'\t') {
        let newline = if text[..line_start].ends_with("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        format!(",{newline}{indent}\"{member}\": \"{id}\"")
    } else {
        format!(", \"{member}\": \"{id}\"")
    }
}

/// What goes right after the object's `{`: on a line of its own, indented like the member
/// after it, when the object spans lines; inline otherwise.
fn insertion(text: &str, open: usize, id: &str) -> String {
    let after = &text[open + 1..];
    let gap = after.len() - after.trim_start_matches([' ', '\t']).len();
    let rest = &after[gap..];
    if rest.starts_with('\n') || rest.starts_with("\r\n") {
        let newline = if rest.starts_with("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        let line = &rest[newline.len()..];
        let indent = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
        format!("{newline}{indent}\"{LINE_ID}\": \"{id}\",")
    } else if gap > 0 {
        format!(" \"{LINE_ID}\": \"{id}\",")
    } else {
        format!("\"{LINE_ID}\": \"{id}\", ")
    }
}

/// A JSON scanner that keeps where each value starts and ends, which the tagger needs to write
/// into a file without re-formatting it. Only the shape is kept: strings are read back from
/// the text when needed.
mod scan {
    /// A value and its byte span in the text (`start` at its first byte, `end` one past).
    #[derive(Debug)]
    pub struct Value {
        pub start: usize,
        pub end: usize,
        pub kind: Kind,
    }

    #[derive(Debug)]
    pub enum Kind {
        /// Members as (key, value); a key is a `String` value.
        Object(Vec<(Value, Value)>),
        Array(Vec<Value>),
        String,
        Other,
    }

    impl Value {
        /// The member named `key`, if this is an object that has one.
        pub fn member<'v>(&'v self, text: &str, key: &str) -> Option<&'v Value> {
            self.entry(text, key).map(|(_, v)| v)
        }

        /// The member named `key`, key and value, if this is an object that has one.
        pub fn entry<'v>(&'v self, text: &str, key: &str) -> Option<(&'v Value, &'v Value)> {
            let Kind::Object(members) = &self.kind else {
                return None;
            };
            members
                .iter()
                .find(|(k, _)| string_at(text, k) == key)
                .map(|(k, v)| (k, v))
        }
    }

    /// The decoded string a `String` value spans (its escapes undone).
    pub fn string_at(text: &str, value: &Value) -> String {
        serde_json::from_str::<String>(&text[value.start..value.end]).unwrap_or_default()
    }

    /// Parses `text`, or says at which byte and why not.
    pub fn parse(text: &str) -> Result<Value, (usize, &'static str)> {
        let mut p = Parser {
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        };
        let value = p.value()?;
        p.space();
        if p.at != p.bytes.len() {
            return Err((p.at, "text after the value"));
        }
        Ok(value)
    }

    /// Deeper than any content file nests; a guard against a stack overflow on hostile input.
    const MAX_DEPTH: usize = 128;

    struct Parser<'t> {
        bytes: &'t [u8],
        at: usize,
        depth: usize,
    }

    impl Parser<'_> {
        fn space(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
                self.at += 1;
            }
        }

        fn value(&mut self) -> Result<Value, (usize, &'static str)> {
            self.space();
            let start = self.at;
            match self.bytes.get(self.at) {
                Some(b'{') => self.nested(|p| p.object(start)),
                Some(b'[') => self.nested(|p| p.array(start)),
                Some(b'"') => {
                    self.string()?;
                    Ok(Value {
                        start,
                        end: self.at,
                        kind: Kind::String,
                    })
                }
                Some(_) => {
                    while let Some(b) = self.bytes.get(self.at) {
                        if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                            break;
                        }
                        self.at += 1;
                    }
                    if self.at == start {
                        return Err((start, "expected a value"));
                    }
                    Ok(Value {
                        start,
                        end: self.at,
                        kind: Kind::Other,
                    })
                }
                None => Err((start, "unexpected end")),
            }
        }

        fn nested(
            &mut self,
            inner: impl FnOnce(&mut Self) -> Result<Value, (usize, &'static str)>,
        ) -> Result<Value, (usize, &'static str)> {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err((self.at, "nested too deeply"));
            }
            let value = inner(self);
            self.depth -= 1;
            value
        }

        fn string(&mut self) -> Result<(), (usize, &'static str)> {
            let start = self.at;
            self.at += 1;
            loop {
                match self.bytes.get(self.at) {
                    Some(b'"') => {
                        self.at += 1;
                        return Ok(());
                    }
                    Some(b'\\') => self.at += 2,
                    Some(_) => self.at += 1,
                    None => return Err((start, "unterminated string")),
                }
            }
        }

        fn expect(&mut self, byte: u8, reason: &'static str) -> Result<(), (usize, &'static str)> {
            self.space();
            if self.bytes.get(self.at) == Some(&byte) {
                self.at += 1;
                Ok(())
            } else {
                Err((self.at, reason))
            }
        }

        /// The items of an object or array, from its opening bracket to past `close`: `item`
        /// reads each, and a `,` or `close` must follow it (else the error `reason`).
        fn items<T>(
            &mut self,
            close: u8,
            reason: &'static str,
            mut item: impl FnMut(&mut Self) -> Result<T, (usize, &'static str)>,
        ) -> Result<Vec<T>, (usize, &'static str)> {
            self.at += 1;
            let mut items = Vec::new();
            self.space();
            if self.bytes.get(self.at) == Some(&close) {
                self.at += 1;
                return Ok(items);
            }
            loop {
                items.push(item(self)?);
                self.space();
                match self.bytes.get(self.at) {
                    Some(b',') => self.at += 1,
                    Some(&b) if b == close => {
                        self.at += 1;
                        return Ok(items);
                    }
                    _ => return Err((self.at, reason)),
                }
            }
        }

        fn object(&mut self, start: usize) -> Result<Value, (usize, &'static str)> {
            let members = self.items(b'}', "expected `,` or `}`", |p| {
                p.space();
                let key = p.value()?;
                if !matches!(key.kind, Kind::String) {
                    return Err((key.start, "expected a string key"));
                }
                p.expect(b':', "expected `:`")?;
                Ok((key, p.value()?))
            })?;
            Ok(Value {
                start,
                end: self.at,
                kind: Kind::Object(members),
            })
        }

        fn array(&mut self, start: usize) -> Result<Value, (usize, &'static str)> {
            let items = self.items(b']', "expected `,` or `]`", Self::value)?;
            Ok(Value {
                start,
                end: self.at,
                kind: Kind::Array(items),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{
  "FirstNode": "Hello",
  "Speaker": "Pim",

  "Hello": {
    "Text": "Shh! I'm counting crabs.",
    "Responses": [
      { "Text": "Need any help?", "NextNode": "Bye" },
      {"Text": "Good luck.", "NextNode": "Bye"}
    ]
  },
  "Bye": { "LineId": "line:given", "Text": "Bye!", "Close": true },
  "Router": { "NextNode": "Bye" }
}
"#;

    #[test]
    fn tagging_adds_ids_where_text_has_none_and_keeps_every_other_byte() {
        let mut taken = HashSet::from(["line:given".to_owned()]);
        let (tagged, added) = tag_file("Pim.json", FILE, Format::Canonical, &mut taken)
            .expect("the test input is valid");
        assert_eq!(added, 3);
        // Only insertions: removing every LineId member gives the file back.
        let ids = ids_in(&tagged, Format::Canonical);
        assert_eq!(ids.len(), 4, "{tagged}");
        let mut stripped = tagged.clone();
        for id in ids.iter().filter(|id| *id != "line:given") {
            for form in [
                format!("\n    \"LineId\": \"{id}\","),
                format!(" \"LineId\": \"{id}\","),
                format!("\"LineId\": \"{id}\", "),
            ] {
                stripped = stripped.replace(&form, "");
            }
        }
        assert_eq!(stripped, FILE);
        // The result parses, and every line has its id.
        let mut diagnostics = Vec::new();
        let parsed =
            crate::canonical::parse_conversation("Pim.json", tagged.as_bytes(), &mut diagnostics)
                .expect("the test input is valid");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let crate::model::NodeEntry::Whole(hello) = &parsed.nodes["Hello"] else {
            panic!("whole node");
        };
        assert!(hello.line.is_some());
        let Exit::Responses(responses) = &hello.exit else {
            panic!("responses");
        };
        assert!(responses.iter().all(|r| r.line.is_some()));
    }

    #[test]
    fn tagging_twice_changes_nothing_and_never_reuses_an_id() {
        let mut taken = HashSet::new();
        let (once, _) = tag_file("Pim.json", FILE, Format::Canonical, &mut taken)
            .expect("the test input is valid");
        let (twice, added) = tag_file("Pim.json", &once, Format::Canonical, &mut taken)
            .expect("the test input is valid");
        assert_eq!((twice.as_str(), added), (once.as_str(), 0));
        // The same file tagged again from scratch with the first run's ids taken gets new ones.
        let (other, _) = tag_file("Pim.json", FILE, Format::Canonical, &mut taken)
            .expect("the test input is valid");
        let first: HashSet<_> = ids_in(&once, Format::Canonical).into_iter().collect();
        let second: HashSet<_> = ids_in(&other, Format::Canonical).into_iter().collect();
        assert_eq!(first.intersection(&second).count(), 1, "only the given id");
    }

    #[test]
    fn an_editor_file_is_tagged_in_its_nodes_list() {
        let file = r#"{ "Format": "banter-editor/1", "FirstNode": { "Id": 1 },
  "Nodes": [
    { "Id": 1, "Name": "Greet", "Text": "Hello.",
      "Responses": [ { "Text": "Hi.", "Next": { "Id": 2 } } ] },
    { "Id": 2, "Name": "Bye", "Text": "See you.", "Close": true }
  ] }"#;
        let (tagged, added) = tag_file("S.editor.json", file, Format::Editor, &mut HashSet::new())
            .expect("the test input is valid");
        assert_eq!(added, 3);
        assert_eq!(ids_in(&tagged, Format::Editor).len(), 3);
        let mut diagnostics = Vec::new();
        crate::editor::parse_editor_export("S.editor.json", tagged.as_bytes(), &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
    }

    #[test]
    fn a_greyed_out_reason_gets_its_own_id_next_to_it() {
        let file = r#"{
  "FirstNode": "Dock",
  "Dock": {
    "LineId": "line:dock",
    "Text": "What'll it be?",
    "Responses": [
      {
        "Text": "Row me out.",
        "Conditions": "coins >= 100",
        "Disabled": "Needs 100 coins."
      },
      { "LineId": "line:given", "Text": "Bye.", "Disabled": "Not yet.", "Conditions": "false" },
      { "LineId": "line:kept", "Text": "Hm.", "Disabled": "Kept.", "DisabledLineId": "line:reason" }
    ]
  }
}
"#;
        let mut taken = HashSet::from(["line:reason".to_owned()]);
        let (tagged, added) = tag_file("Dock.json", file, Format::Canonical, &mut taken)
            .expect("the test input is valid");
        // The first response's text and reason, the second's reason.
        assert_eq!(added, 3, "{tagged}");
        let ids = ids_in(&tagged, Format::Canonical);
        assert_eq!(ids.len(), 7, "{ids:?}");
        assert!(ids.contains(&"line:reason".to_owned()));
        // The reason's id sits right after it, on its own line when the reason is on one.
        let reason = derive_id(&["Dock.json", "Dock", "r1", "disabled"]);
        assert!(
            tagged.contains(&format!(
                "\"Disabled\": \"Needs 100 coins.\",\n        \"DisabledLineId\": \"{reason}\"\n"
            )),
            "{tagged}"
        );
        let inline = derive_id(&["Dock.json", "Dock", "r2", "disabled"]);
        assert!(
            tagged.contains(&format!(
                "\"Disabled\": \"Not yet.\", \"DisabledLineId\": \"{inline}\", \"Conditions\""
            )),
            "{tagged}"
        );
        // Only insertions, and the result parses with every reason keyed.
        let mut diagnostics = Vec::new();
        let parsed =
            crate::canonical::parse_conversation("Dock.json", tagged.as_bytes(), &mut diagnostics)
                .expect("the tagged file parses");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let crate::model::NodeEntry::Whole(dock) = &parsed.nodes["Dock"] else {
            panic!("whole node");
        };
        let Exit::Responses(responses) = &dock.exit else {
            panic!("responses");
        };
        let reasons: Vec<Option<&str>> = responses
            .iter()
            .map(|r| r.disabled_line.as_deref())
            .collect();
        assert_eq!(
            reasons,
            [
                Some(reason.as_str()),
                Some(inline.as_str()),
                Some("line:reason")
            ]
        );
        assert!(responses[0].line.is_some());
        // Tagged again: nothing to add.
        let (again, none) = tag_file("Dock.json", &tagged, Format::Canonical, &mut taken)
            .expect("the tagged file is valid");
        assert_eq!((again.as_str(), none), (tagged.as_str(), 0));
    }

    #[test]
    fn a_malformed_file_is_refused_with_where() {
        for bad in ["{", "{\"a\": }", "[1 2]", "\"open", "{\"a\": 1} x"] {
            let err = tag_file("bad.json", bad, Format::Canonical, &mut HashSet::new());
            assert!(
                matches!(err, Err(TagError::Syntax { .. })),
                "{bad}: {err:?}"
            );
        }
        let deep = "[".repeat(10_000);
        assert!(tag_file("deep.json", &deep, Format::Canonical, &mut HashSet::new()).is_err());
    }

    #[test]
    fn derived_ids_are_stable_and_distinguish_their_parts() {
        assert_eq!(derive_id(&["a", "b"]), derive_id(&["a", "b"]));
        assert_ne!(derive_id(&["ab", "c"]), derive_id(&["a", "bc"]));
        assert!(derive_id(&["x"]).starts_with(ID_PREFIX));
        assert_eq!(derive_id(&["x"]).len(), ID_PREFIX.len() + 10);
    }
}
