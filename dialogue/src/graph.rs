//! The dialogue graph `G = (V, E)` (article section 3), built in two passes like an assembler
//! resolving forward jumps.
//!
//! Pass one makes a Prompt vertex for every node, so a `NextNode` may name a node that comes
//! later, then every node's Response vertices (named `<key>_r<i>`, priority `i`, 1-based) and
//! Branch vertices, and looks up every exit's target. Pass two wires them: the root to
//! `FirstNode`, each node to its responses, each response or linear node to its `NextNode`. A
//! name that does not exist yields a diagnostic and the edge is skipped; the rest still works.
//! Diagnostics come out in pass two's order, node by node.
//!
//! Build cost is linear in nodes and edges; at scale it is memory-bound (see BENCHMARKS.md,
//! "Graph load, merge and build"): each name is allocated once, every array once at its final
//! size, and name lookups go in batches so their cache misses overlap.
//!
//! The graph is immutable once built and shared (`Arc`) by every conversation that walks it.
//! Vertex ids are dense integers and edges live in one array (compressed sparse rows), so a walk
//! step is a few index lookups. Each authored action's canonical payload is built here, once,
//! so validating a client's action is a string comparison, not a rebuild.
//!
//! Why one file over 600 lines: the two passes share the builder's private tables (names, vertex
//! ranges, the edge array under construction) and the walk reads those same arrays; splitting
//! them would turn private invariants into crate-wide ones. Its unit tests are the last 50 lines.

use banter_protocol::{Action, ActionPayload, ActionType};

use crate::condition::Condition;
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{ChoiceRule, Conversation, Exit, Next, Pick, Response};

/// A vertex's index in its graph. Dense: `0..graph.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VertexId(pub u32);

impl VertexId {
    /// The root vertex of every graph.
    pub const ROOT: VertexId = VertexId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The six vertex types of the article. Tables produce Root, Prompt and Response; a `NextNode`
/// list produces a Branch. Condition and Action are part of the vocabulary for editor tooling and
/// are walked as transparent (a Condition gates on its expression, an Action carries actions);
/// no source format produces them today.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexKind {
    Root,
    /// An NPC line.
    Prompt,
    /// A player's response button.
    Response,
    /// Transparent: walkers pass straight through it to its children.
    Branch,
    Condition,
    Action,
}

/// A contiguous range in one of the graph's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// One vertex. Names are kept for messages and the wire; ids are what the walk uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vertex {
    pub kind: VertexKind,
    pub name: Box<str>,
    pub text: Box<str>,
    /// Order among its siblings (responses: 1-based index in the node).
    pub priority: u32,
    /// A Prompt with `Close: true`: the conversation ends after it.
    pub close: bool,
    /// Carries a CheckQuest: a client does not follow its exit and waits for the server's jump.
    pub awaits_jump: bool,
    /// `Once`: a line shown at most once per player as a next line; a response offered until
    /// picked once.
    pub once: bool,
    /// A response's `Disabled` reason: shown greyed out with it when its `Conditions` fail.
    pub disabled: Option<Box<str>>,
    /// A Prompt's recording in the locale served, in milliseconds: the typewriter finishes the
    /// line when the clip does.
    pub voice_millis: Option<u64>,
    outputs: Span,
    actions: Span,
    condition: Option<u32>,
}

impl Vertex {
    fn new(kind: VertexKind, name: Box<str>, text: &str, priority: u32) -> Self {
        Vertex {
            kind,
            name,
            text: text.into(),
            priority,
            close: false,
            awaits_jump: false,
            once: false,
            disabled: None,
            voice_millis: None,
            outputs: Span::default(),
            actions: Span::default(),
            condition: None,
        }
    }
}

/// An action as authored on a vertex, with its canonical payload built once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthoredAction {
    pub action: Action,
    pub action_type: ActionType,
    pub payload: Box<str>,
    /// The node or response it is authored on.
    pub vertex: VertexId,
}

/// An immutable dialogue graph for one conversation (after the layer union).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DialogueGraph {
    name: String,
    speaker: Option<String>,
    vertices: Vec<Vertex>,
    edges: Vec<VertexId>,
    actions: Vec<AuthoredAction>,
    conditions: Vec<Condition>,
    by_name: NameIndex,
    /// `Shared`'s rule; `None` when each player walks the conversation alone.
    shared: Option<ChoiceRule>,
    /// Each node's own `Choice`, by vertex, ascending (few nodes have one).
    choices: Vec<(VertexId, ChoiceRule)>,
    /// Each line group's rule, by its Branch vertex, ascending.
    groups: Vec<(VertexId, LineGroup)>,
    /// What [`DialogueGraph::visit_reads`] answers, found once when the graph is built.
    visit_reads: Box<[(VertexId, bool)]>,
}

/// A line group's rule, on the Branch vertex whose outputs are its candidates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineGroup {
    pub pick: Pick,
    /// Each candidate's weight, in the Branch's output order (1 unless `Weighted` says).
    pub weights: Box<[u32]>,
    /// Shown when no candidate holds.
    pub fallback: Option<VertexId>,
}

/// The index of an authored action in its graph; what the walk's arming counters key on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionIndex(pub u32);

impl DialogueGraph {
    /// Builds the graph of a merged conversation. `file` names the conversation in diagnostics
    /// when a node's origin file is unknown.
    pub fn build(conversation: &Conversation, diagnostics: &mut Vec<Diagnostic>) -> DialogueGraph {
        Builder::new(conversation, diagnostics).build()
    }

    /// The conversation's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn speaker(&self) -> Option<&str> {
        self.speaker.as_deref()
    }

    /// Number of vertices, root included.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vertices.len() <= 1
    }

    pub fn vertex(&self, id: VertexId) -> Option<&Vertex> {
        self.vertices.get(id.index())
    }

    pub fn vertices(&self) -> impl ExactSizeIterator<Item = (VertexId, &Vertex)> {
        self.vertices
            .iter()
            .enumerate()
            .map(|(i, v)| (VertexId(i as u32), v))
    }

    /// The vertex of a node or response name (`Greet`, `Greet_r2`).
    pub fn find(&self, name: &str) -> Option<VertexId> {
        self.by_name.get(name, &self.vertices)
    }

    /// The `FirstNode`, if the conversation has one that exists.
    pub fn first_node(&self) -> Option<VertexId> {
        self.outputs(VertexId::ROOT).first().copied()
    }

    /// A vertex's outputs, sorted by priority. Empty for an unknown id.
    pub fn outputs(&self, id: VertexId) -> &[VertexId] {
        self.vertices
            .get(id.index())
            .map_or(&[], |v| &self.edges[v.outputs.range()])
    }

    /// The actions authored on a vertex, with their indices.
    pub fn actions(
        &self,
        id: VertexId,
    ) -> impl ExactSizeIterator<Item = (ActionIndex, &AuthoredAction)> {
        let span = self
            .vertices
            .get(id.index())
            .map_or(Span::default(), |v| v.actions);
        self.actions[span.range()]
            .iter()
            .enumerate()
            .map(move |(i, a)| (ActionIndex(span.start + i as u32), a))
    }

    /// One authored action by index.
    pub fn action(&self, index: ActionIndex) -> Option<&AuthoredAction> {
        self.actions.get(index.0 as usize)
    }

    /// Every authored action in the graph.
    pub fn all_actions(&self) -> &[AuthoredAction] {
        &self.actions
    }

    /// How the group picks a response in this conversation (`Shared`); `None` when it is not
    /// shared: each player walks it alone.
    pub fn shared(&self) -> Option<ChoiceRule> {
        self.shared
    }

    /// How the group picks among `line`'s responses: the node's own `Choice`, else the
    /// conversation's `Shared`. `None` when the conversation is not shared.
    pub fn choice_rule(&self, line: VertexId) -> Option<ChoiceRule> {
        let shared = self.shared?;
        Some(
            self.choices
                .binary_search_by_key(&line, |&(v, _)| v)
                .map_or(shared, |at| self.choices[at].1),
        )
    }

    /// The NPC line a response hangs from (`<line>_r<i>`), if `response` is one.
    pub fn line_of(&self, response: VertexId) -> Option<VertexId> {
        let v = self.vertex(response)?;
        if v.kind != VertexKind::Response {
            return None;
        }
        // Read back from the name the builder gave it (`numbered`), without allocating.
        let name = &*v.name;
        let head = name.trim_end_matches(|c: char| c.is_ascii_digit());
        if name[head.len()..].parse::<u32>().ok()? != v.priority {
            return None;
        }
        let line = self.find(head.strip_suffix("_r")?)?;
        self.outputs(line).contains(&response).then_some(line)
    }

    /// The line group whose Branch vertex is `branch`, if it is one.
    pub fn group(&self, branch: VertexId) -> Option<&LineGroup> {
        self.groups
            .binary_search_by_key(&branch, |(b, _)| *b)
            .ok()
            .map(|at| &self.groups[at].1)
    }

    /// Every line group, by Branch vertex.
    pub fn groups(&self) -> &[(VertexId, LineGroup)] {
        &self.groups
    }

    /// True if a `Weighted` group needs the conversation's seed.
    pub fn has_weighted(&self) -> bool {
        self.groups.iter().any(|(_, g)| g.pick == Pick::Weighted)
    }

    /// The vertices whose visit counts this conversation reads, ascending: named by `visits`
    /// or `visited`, marked `Once`, or a `LeastRecent` candidate; and whether each is a
    /// `LeastRecent` candidate (whose last showing the walk reads too). What an `opened`
    /// sheet's `visits` and `last_seen` carry.
    pub fn visit_reads(&self) -> &[(VertexId, bool)] {
        &self.visit_reads
    }

    fn find_visit_reads(&self) -> Vec<(VertexId, bool)> {
        let mut reads: Vec<(VertexId, bool)> = Vec::new();
        for (id, v) in self.vertices() {
            if v.once {
                reads.push((id, false));
            }
            if let Some(c) = self.condition(id) {
                c.visit_references(&mut |r| {
                    if let crate::condition::Reference::Visits(name) = r
                        && let Some(found) = self.find(name)
                    {
                        reads.push((found, false));
                    }
                });
            }
        }
        for (branch, group) in &self.groups {
            if group.pick == Pick::LeastRecent {
                reads.extend(self.outputs(*branch).iter().map(|&c| (c, true)));
            }
        }
        reads.sort_unstable();
        // One entry per vertex, a LeastRecent candidate's marked so.
        reads.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 |= later.1;
                true
            } else {
                false
            }
        });
        reads
    }

    /// The vertex's `Conditions`, if it has any.
    pub fn condition(&self, id: VertexId) -> Option<&Condition> {
        self.vertices
            .get(id.index())
            .and_then(|v| v.condition)
            .and_then(|c| self.conditions.get(c as usize))
    }
}

/// How many names [`NameIndex`] hashes and probes together: the cache misses of a batch
/// overlap instead of following one another (at a million nodes the table is far larger than
/// the caches, and one miss per name after another was most of the build).
const BATCH: usize = 16;

/// Vertex names to ids without a second copy of the names: an open-addressing table (linear
/// probing, at most half full) of ids and 32-bit hash tags, whose keys are the vertices' own
/// names. A slot is 8 bytes; a mismatched tag is skipped without reading a vertex.
#[derive(Clone)]
struct NameIndex {
    /// A power of two long; `Slot::EMPTY` marks a free slot.
    slots: Vec<Slot>,
    len: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot {
    id: u32,
    tag: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        id: u32::MAX,
        tag: 0,
    };

    fn is_empty(self) -> bool {
        self.id == Slot::EMPTY.id
    }
}

/// The index is a function of the vertices, which the graph compares: two graphs with equal
/// vertices answer every lookup alike, whatever their tables' sizes.
impl PartialEq for NameIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for NameIndex {}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameIndex")
            .field("len", &self.len)
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl NameIndex {
    /// Room for `names` names without growing.
    fn with_capacity(names: usize) -> Self {
        NameIndex {
            slots: vec![Slot::EMPTY; (names * 2).next_power_of_two().max(8)],
            len: 0,
        }
    }

    /// A name's tag: a fixed hash (no random state: the table is built from authored content,
    /// and a lookup cannot make a probe run longer than the content made it). 64-bit words mixed
    /// multiplicatively, then a murmur3 finalizer, folded to 32 bits.
    fn tag(name: &str) -> u32 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mix = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
        let bytes = name.as_bytes();
        let (words, rest) = bytes.as_chunks::<8>();
        let mut h = bytes.len() as u64;
        for word in words {
            h = mix(h, u64::from_le_bytes(*word));
        }
        // The last 1 to 7 bytes, read without a copy: the final 8 bytes (overlapping the last
        // whole word), or for a short name its first and last 4, or first, middle and last.
        if !rest.is_empty() {
            let tail = match (bytes.last_chunk::<8>(), bytes.first_chunk::<4>()) {
                (Some(last), _) => u64::from_le_bytes(*last),
                (None, Some(first)) => {
                    let last = bytes
                        .last_chunk::<4>()
                        .map_or(0, |l| u32::from_le_bytes(*l));
                    u64::from(u32::from_le_bytes(*first)) | u64::from(last) << 32
                }
                (None, None) => {
                    let n = bytes.len();
                    u64::from(bytes[0])
                        | u64::from(bytes[n / 2]) << 8
                        | u64::from(bytes[n - 1]) << 16
                }
            };
            h = mix(h, tail);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        (h >> 32) as u32
    }

    /// The first slot to probe for a tag: its top bits, so entries with one home slot still
    /// differ in the low bits the tag comparison looks at, and growing needs no names.
    fn home(&self, tag: u32) -> usize {
        ((u64::from(tag) * self.slots.len() as u64) >> 32) as usize
    }

    fn get(&self, name: &str, vertices: &[Vertex]) -> Option<VertexId> {
        self.probe(name, Self::tag(name), vertices).ok()
    }

    /// The id indexed under `name`, or the free slot where it would go.
    fn probe(&self, name: &str, tag: u32, vertices: &[Vertex]) -> Result<VertexId, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(tag);
        loop {
            let slot = self.slots[i];
            if slot.is_empty() {
                return Err(i);
            }
            if slot.tag == tag
                && vertices
                    .get(slot.id as usize)
                    .is_some_and(|v| *v.name == *name)
            {
                return Ok(VertexId(slot.id));
            }
            i = (i + 1) & mask;
        }
    }

    /// Hashes a batch of names and reads each one's home slot, in two tight loops.
    fn prepare<'n>(&self, names: impl Iterator<Item = &'n str>) -> ([u32; BATCH], [Slot; BATCH]) {
        let mut tags = [0u32; BATCH];
        for (tag, name) in tags.iter_mut().zip(names) {
            *tag = Self::tag(name);
        }
        let mut homes = [Slot::EMPTY; BATCH];
        for (home, &tag) in homes.iter_mut().zip(&tags) {
            *home = self.slots[self.home(tag)];
        }
        (tags, homes)
    }

    /// Looks up at most `BATCH` names, appending what each names to `out`.
    fn get_batch(&self, names: &[&str], vertices: &[Vertex], out: &mut Vec<Option<VertexId>>) {
        let (tags, homes) = self.prepare(names.iter().copied());
        for ((name, tag), home) in names.iter().zip(tags).zip(homes) {
            // An empty home slot answers without probing.
            let found = if home.is_empty() {
                None
            } else {
                self.probe(name, tag, vertices).ok()
            };
            out.push(found);
        }
    }

    /// Indexes `vertices[ids]` under their names, in id order and in batches; the ids of
    /// vertices whose name an earlier vertex already has are appended to `taken` instead.
    fn insert_all(&mut self, ids: std::ops::Range<u32>, vertices: &[Vertex], taken: &mut Vec<u32>) {
        while (self.len + ids.len()) * 2 > self.slots.len() {
            self.grow();
        }
        let mut start = ids.start;
        while start < ids.end {
            let end = ids.end.min(start + BATCH as u32);
            let batch = &vertices[start as usize..end as usize];
            let (tags, homes) = self.prepare(batch.iter().map(|v| &*v.name));
            for (((id, v), tag), home) in (start..end).zip(batch).zip(tags).zip(homes) {
                // A home slot that was free (and still is, after this batch's inserts) is taken
                // without probing.
                let free = self.home(tag);
                let probed = if home.is_empty() && self.slots[free].is_empty() {
                    Err(free)
                } else {
                    self.probe(&v.name, tag, vertices)
                };
                match probed {
                    Ok(_) => taken.push(id),
                    Err(free) => {
                        self.slots[free] = Slot { id, tag };
                        self.len += 1;
                    }
                }
            }
            start = end;
        }
    }

    /// Doubles the table; the tags are enough to place every entry again.
    fn grow(&mut self) {
        let larger = vec![Slot::EMPTY; (self.slots.len() * 2).max(8)];
        let old = std::mem::replace(&mut self.slots, larger);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| !s.is_empty()) {
            let mut i = self.home(slot.tag);
            while !self.slots[i].is_empty() {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }
}

/// Exit targets waiting to be looked up a batch at a time, and the answers so far, in order.
struct Lookups<'a> {
    pending: Vec<&'a str>,
    found: Vec<Option<VertexId>>,
}

impl<'a> Lookups<'a> {
    fn add(&mut self, name: &'a str, index: &NameIndex, vertices: &[Vertex]) {
        self.pending.push(name);
        if self.pending.len() == BATCH {
            self.flush(index, vertices);
        }
    }

    fn flush(&mut self, index: &NameIndex, vertices: &[Vertex]) {
        index.get_batch(&self.pending, vertices, &mut self.found);
        self.pending.clear();
    }
}

/// Where in a node a reference sits (`Responses[2].NextNode[1]`), rendered only when a
/// diagnostic is reported.
#[derive(Clone, Copy)]
struct Field {
    response: Option<usize>,
    name: &'static str,
    item: Option<usize>,
}

impl Field {
    fn new(name: &'static str) -> Self {
        Field {
            response: None,
            name,
            item: None,
        }
    }

    fn in_response(response: usize, name: &'static str) -> Self {
        Field {
            response: Some(response),
            ..Field::new(name)
        }
    }

    fn item(self, item: usize) -> Self {
        Field {
            item: Some(item),
            ..self
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(response) = self.response {
            write!(f, "Responses[{response}].")?;
        }
        f.write_str(self.name)?;
        if let Some(item) = self.item {
            write!(f, "[{item}]")?;
        }
        Ok(())
    }
}

/// `<name><separator><n>` (`Greet_r2`, `Greet_b17`) in one exact-size allocation.
fn numbered(name: &str, separator: &str, n: usize) -> Box<str> {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = &digits[start..];
    let mut out = String::with_capacity(name.len() + separator.len() + digits.len());
    out.push_str(name);
    out.push_str(separator);
    out.extend(digits.iter().map(|&d| char::from(d)));
    out.into_boxed_str()
}

/// Upper bounds of the graph's arrays (exact when every target exists), so each is allocated
/// once at its final size.
#[derive(Default)]
struct Sizes {
    vertices: usize,
    edges: usize,
    actions: usize,
    conditions: usize,
}

impl Sizes {
    fn of(conversation: &Conversation) -> Sizes {
        let mut sizes = Sizes {
            vertices: 1 + conversation.nodes.len(),
            edges: usize::from(conversation.first_node.is_some()),
            ..Sizes::default()
        };
        for node in conversation.nodes.values() {
            sizes.actions += node.actions.len();
            sizes.conditions += usize::from(node.conditions.is_some());
            match &node.exit {
                Exit::End | Exit::Close => {}
                Exit::Next(next) => sizes.next(next),
                Exit::Responses(responses) => {
                    sizes.vertices += responses.len();
                    sizes.edges += responses.len();
                    for response in responses {
                        sizes.actions += response.actions.len();
                        sizes.conditions += usize::from(response.conditions.is_some());
                        if let Some(next) = &response.next {
                            sizes.next(next);
                        }
                    }
                }
            }
        }
        sizes
    }

    fn next(&mut self, next: &Next) {
        match next {
            Next::One(_) => self.edges += 1,
            Next::FirstOf(targets) => {
                self.vertices += 1;
                self.edges += 1 + targets.len();
            }
            Next::Group(group) => {
                self.vertices += 1;
                self.edges += 1 + group.among.len();
            }
        }
    }
}

struct Builder<'a> {
    conversation: &'a Conversation,
    diagnostics: &'a mut Vec<Diagnostic>,
    graph: DialogueGraph,
    /// The Prompt each exit target names (`None`: no such node), in the order pass two wires
    /// them.
    targets: std::vec::IntoIter<Option<VertexId>>,
    /// The next Response or Branch vertex pass two reaches (pass one made them in that order).
    next_made: u32,
    /// Vertices whose name an earlier vertex has, ascending; reported when pass two reaches them.
    taken: std::iter::Peekable<std::vec::IntoIter<u32>>,
    /// Each group's `Fallback` by name, with where it was written: looked up after pass two.
    fallbacks: Vec<(VertexId, String, String, Field)>,
}

impl<'a> Builder<'a> {
    fn new(conversation: &'a Conversation, diagnostics: &'a mut Vec<Diagnostic>) -> Self {
        let sizes = Sizes::of(conversation);
        let graph = DialogueGraph {
            name: conversation.name.clone(),
            speaker: conversation.speaker.clone(),
            shared: conversation.shared.as_ref().map(|s| s.rule()),
            choices: Vec::new(),
            groups: Vec::new(),
            visit_reads: Box::default(),
            vertices: Vec::with_capacity(sizes.vertices),
            edges: Vec::with_capacity(sizes.edges),
            actions: Vec::with_capacity(sizes.actions),
            conditions: Vec::with_capacity(sizes.conditions),
            by_name: NameIndex::with_capacity(sizes.vertices),
        };
        Builder {
            conversation,
            diagnostics,
            graph,
            targets: Vec::new().into_iter(),
            next_made: 0,
            taken: Vec::new().into_iter().peekable(),
            fallbacks: Vec::new(),
        }
    }

    /// The file a node's final version came from; looked up only for a diagnostic.
    fn file(&self, node: &str) -> String {
        self.conversation
            .origin
            .get(node)
            .map_or(&self.conversation.name, |file| file)
            .clone()
    }

    fn push_vertex(&mut self, kind: VertexKind, name: Box<str>, text: &str, priority: u32) {
        self.graph
            .vertices
            .push(Vertex::new(kind, name, text, priority));
    }

    fn build(mut self) -> DialogueGraph {
        let conversation = self.conversation;
        // Pass one makes every vertex. The root, then a Prompt per node...
        self.push_vertex(VertexKind::Root, Box::default(), "", 0);
        for (name, node) in &conversation.nodes {
            self.push_vertex(VertexKind::Prompt, name.as_str().into(), &node.text, 0);
            if let Some(v) = self.graph.vertices.last_mut() {
                v.close = matches!(node.exit, Exit::Close);
                v.voice_millis = node.voice.as_ref().map(|voice| voice.millis);
            }
        }
        let prompts = self.graph.vertices.len() as u32;
        let mut taken = Vec::new();
        let index = &mut self.graph.by_name;
        index.insert_all(1..prompts, &self.graph.vertices, &mut taken);

        // ...then each node's Responses and Branches, in the order pass two wires them, looking
        // up every exit's target among the Prompts on the way.
        let mut lookups = Lookups {
            pending: Vec::with_capacity(BATCH),
            found: Vec::with_capacity(self.graph.edges.capacity()),
        };
        for (name, node) in &conversation.nodes {
            match &node.exit {
                Exit::End | Exit::Close => {}
                Exit::Next(next) => self.make_exit(name, next, &mut lookups),
                Exit::Responses(responses) => {
                    for (i, response) in responses.iter().enumerate() {
                        let priority = i as u32 + 1;
                        let name = numbered(name, "_r", i + 1);
                        self.push_vertex(VertexKind::Response, name, &response.text, priority);
                    }
                    for next in responses.iter().filter_map(|r| r.next.as_ref()) {
                        self.make_exit(name, next, &mut lookups);
                    }
                }
            }
        }
        lookups.flush(&self.graph.by_name, &self.graph.vertices);
        self.targets = lookups.found.into_iter();
        let made = prompts..self.graph.vertices.len() as u32;
        let index = &mut self.graph.by_name;
        index.insert_all(made, &self.graph.vertices, &mut taken);
        self.taken = taken.into_iter().peekable();
        self.next_made = prompts;

        // Pass two wires them: the root, then every node in id order.
        let first = conversation.first_node.as_deref().and_then(|name| {
            let found = self.graph.find(name);
            self.resolved(found, name, None, Field::new("FirstNode"))
        });
        self.set_outputs(VertexId::ROOT, first.as_slice());

        for (i, (name, node)) in conversation.nodes.iter().enumerate() {
            let id = VertexId(i as u32 + 1);
            self.set_actions(id, &node.actions);
            if let Some(choice) = &node.choice {
                self.graph.choices.push((id, choice.rule()));
            }
            self.set_condition(
                id,
                node.conditions.as_deref(),
                name,
                Field::new("Conditions"),
            );
            match &node.exit {
                Exit::End | Exit::Close => self.set_outputs(id, &[]),
                Exit::Next(next) => {
                    let target = self.wire_next(name, next, Field::new("NextNode"));
                    self.set_outputs(id, target.as_slice());
                }
                Exit::Responses(responses) => self.wire_responses(id, name, responses),
            }
            self.graph.vertices[id.index()].once = node.once;
        }
        self.resolve_fallbacks();
        self.graph.visit_reads = self.graph.find_visit_reads().into_boxed_slice();
        self.graph
    }

    /// Pass one for an exit: queues its targets for lookup and makes its Branch, if any.
    fn make_exit(&mut self, from: &str, next: &'a Next, lookups: &mut Lookups<'a>) {
        for target in next.targets() {
            lookups.add(target, &self.graph.by_name, &self.graph.vertices);
        }
        if let Next::FirstOf(_) | Next::Group(_) = next {
            let name = numbered(from, "_b", self.graph.vertices.len());
            self.push_vertex(VertexKind::Branch, name, "", 1);
        }
    }

    /// Pass two reaches the next vertex pass one made after the Prompts; a name an earlier
    /// vertex has is reported here, in the order the vertices were made.
    fn reach_made(&mut self) -> VertexId {
        let id = VertexId(self.next_made);
        self.next_made += 1;
        if self.taken.next_if_eq(&id.0).is_some() {
            // A node literally named like a generated vertex (`Greet_r1`): names must be
            // unique because the wire refers to vertices by name.
            let name = self.graph.vertices[id.index()].name.to_string();
            let file = self.file(&name);
            self.diagnostics
                .push(Diagnostic::error(file, Problem::Duplicate(name.clone())).node(name));
        }
        id
    }

    fn wire_responses(&mut self, id: VertexId, name: &str, responses: &[Response]) {
        // The responses' vertices are consecutive, so the node's outputs are a range of ids.
        let first = self.next_made;
        for _ in responses {
            self.reach_made();
        }
        let start = self.graph.edges.len() as u32;
        let ids = (first..first + responses.len() as u32).map(VertexId);
        self.graph.edges.extend(ids);
        self.graph.vertices[id.index()].outputs = Span {
            start,
            len: responses.len() as u32,
        };
        for (i, response) in responses.iter().enumerate() {
            let rid = VertexId(first + i as u32);
            let v = &mut self.graph.vertices[rid.index()];
            v.once = response.once;
            v.disabled = response.disabled.as_deref().map(Box::from);
            self.set_actions(rid, &response.actions);
            self.set_condition(
                rid,
                response.conditions.as_deref(),
                name,
                Field::in_response(i + 1, "Conditions"),
            );
            let target = match &response.next {
                Some(next) => self.wire_next(name, next, Field::in_response(i + 1, "NextNode")),
                None => None,
            };
            self.set_outputs(rid, target.as_slice());
        }
    }

    /// Resolves an exit to the vertex it leads to: one Prompt, or its Branch.
    fn wire_next(&mut self, from: &str, next: &Next, field: Field) -> Option<VertexId> {
        match next {
            Next::One(target) => self.resolve(target, from, field),
            Next::FirstOf(targets) => {
                let branch = self.reach_made();
                let start = self.graph.edges.len() as u32;
                for (i, target) in targets.iter().enumerate() {
                    if let Some(child) = self.resolve(target, from, field.item(i + 1)) {
                        self.graph.edges.push(child);
                    }
                }
                self.graph.vertices[branch.index()].outputs = Span {
                    start,
                    len: self.graph.edges.len() as u32 - start,
                };
                Some(branch)
            }
            Next::Group(group) => {
                let branch = self.reach_made();
                let start = self.graph.edges.len() as u32;
                let mut weights = Vec::with_capacity(group.among.len());
                for (i, (target, weight)) in group.among.iter().zip(&group.weights).enumerate() {
                    if let Some(child) = self.resolve(target, from, field.item(i + 1)) {
                        self.graph.edges.push(child);
                        weights.push(weight.unwrap_or(1));
                    }
                }
                self.graph.vertices[branch.index()].outputs = Span {
                    start,
                    len: self.graph.edges.len() as u32 - start,
                };
                // The fallback is looked up once every vertex exists (`resolve_fallbacks`).
                self.graph.groups.push((
                    branch,
                    LineGroup {
                        pick: group.pick,
                        weights: weights.into_boxed_slice(),
                        fallback: None,
                    },
                ));
                if let Some(fallback) = &group.fallback {
                    self.fallbacks
                        .push((branch, fallback.clone(), from.to_owned(), field));
                }
                Some(branch)
            }
        }
    }

    /// Every group's `Fallback`, looked up by name now that the graph is whole.
    fn resolve_fallbacks(&mut self) {
        for (branch, name, from, field) in std::mem::take(&mut self.fallbacks) {
            let found = self.graph.find(&name);
            let found = self.resolved(found, &name, Some(&from), field);
            if let Ok(at) = self.graph.groups.binary_search_by_key(&branch, |(b, _)| *b) {
                self.graph.groups[at].1.fallback = found;
            }
        }
    }

    /// The next exit target's Prompt, as pass one looked it up.
    fn resolve(&mut self, target: &str, from: &str, field: Field) -> Option<VertexId> {
        let found = self.targets.next().flatten();
        self.resolved(found, target, Some(from), field)
    }

    /// `found` if it is a Prompt; otherwise a diagnostic (in `from`'s file, or the base file for
    /// `FirstNode`) and no edge.
    fn resolved(
        &mut self,
        found: Option<VertexId>,
        target: &str,
        from: Option<&str>,
        field: Field,
    ) -> Option<VertexId> {
        match found {
            Some(id) if self.graph.vertices[id.index()].kind == VertexKind::Prompt => Some(id),
            _ => {
                let file = match from {
                    Some(node) => self.file(node),
                    None => self.conversation.base_file.clone(),
                };
                let mut d = Diagnostic::error(file, Problem::Dangling(target.to_owned()))
                    .field(field.to_string());
                if let Some(from) = from {
                    d = d.node(from);
                }
                self.diagnostics.push(d);
                None
            }
        }
    }

    fn set_outputs(&mut self, id: VertexId, targets: &[VertexId]) {
        let start = self.graph.edges.len() as u32;
        self.graph.edges.extend_from_slice(targets);
        self.graph.vertices[id.index()].outputs = Span {
            start,
            len: targets.len() as u32,
        };
    }

    fn set_actions(&mut self, id: VertexId, actions: &[Action]) {
        let start = self.graph.actions.len() as u32;
        let mut awaits_jump = false;
        for action in actions {
            awaits_jump |= action.action_type() == ActionType::CheckQuest;
            self.graph.actions.push(AuthoredAction {
                action: action.clone(),
                action_type: action.action_type(),
                payload: ActionPayload::build(action).into_boxed_str(),
                vertex: id,
            });
        }
        let v = &mut self.graph.vertices[id.index()];
        v.actions = Span {
            start,
            len: actions.len() as u32,
        };
        v.awaits_jump = awaits_jump;
    }

    fn set_condition(&mut self, id: VertexId, text: Option<&str>, node: &str, field: Field) {
        let Some(text) = text else { return };
        let condition = match Condition::parse(text) {
            Ok(c) => c,
            Err(e) => {
                let file = self.file(node);
                self.diagnostics.push(
                    Diagnostic::error(file, Problem::BadCondition(e.to_string()))
                        .node(node)
                        .field(field.to_string()),
                );
                // Fail closed: a condition that cannot be read never holds.
                Condition::Const(false)
            }
        };
        self.graph.vertices[id.index()].condition = Some(self.graph.conditions.len() as u32);
        self.graph.conditions.push(condition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vertices(names: &[&str]) -> Vec<Vertex> {
        names
            .iter()
            .map(|n| Vertex::new(VertexKind::Prompt, (*n).into(), "", 0))
            .collect()
    }

    #[test]
    fn the_name_index_grows_keeps_the_first_of_a_name_and_finds_names_of_every_length() {
        let mut names: Vec<String> = (0..=40).map(|n| "x".repeat(n)).collect();
        names.extend((0..3000).map(|i| format!("N{i}_r{}", i % 7)));
        names.push("N5_r5".into()); // taken by the loop above
        names.push(String::new()); // taken: the empty name is at 0
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let vertices = vertices(&refs);
        let mut index = NameIndex::with_capacity(0);
        let mut taken = Vec::new();
        index.insert_all(0..vertices.len() as u32, &vertices, &mut taken);
        let last = vertices.len() as u32;
        assert_eq!(taken, [last - 2, last - 1]);
        assert!(index.slots.len() >= 2 * index.len && index.len == vertices.len() - 2);
        for (i, name) in names.iter().enumerate().take(vertices.len() - 2) {
            assert_eq!(
                index.get(name, &vertices),
                Some(VertexId(i as u32)),
                "{name}"
            );
        }
        for missing in ["N3000_r0", "x".repeat(41).as_str(), "N1_r2", "y"] {
            assert_eq!(index.get(missing, &vertices), None, "{missing}");
        }
        let mut found = Vec::new();
        index.get_batch(&["N1_r1", "nope", "xxx"], &vertices, &mut found);
        assert_eq!(found, [Some(VertexId(42)), None, Some(VertexId(3))]);
    }

    #[test]
    fn generated_names_and_field_paths_read_as_before() {
        assert_eq!(&*numbered("Greet", "_r", 2), "Greet_r2");
        assert_eq!(&*numbered("A", "_b", 0), "A_b0");
        assert_eq!(&*numbered("", "_b", 1_234_567), "_b1234567");
        let field = Field::in_response(2, "NextNode").item(1);
        assert_eq!(field.to_string(), "Responses[2].NextNode[1]");
        assert_eq!(Field::new("FirstNode").to_string(), "FirstNode");
    }
}
