//! The content model: a conversation as a flat map of named nodes (article section 2).
//!
//! Both source formats (canonical JSON and the editor export) parse into these types, and only
//! these types go on to the layer union and the graph build, so nothing downstream knows where a
//! conversation came from.

use std::collections::BTreeMap;

use banter_protocol::{Action, ChoiceMode, TieRule};

/// How a shared conversation's group picks a response, as a file writes it: `Shared` on a
/// conversation's base file, or `Choice` on a node (overriding `Shared` for that node's
/// responses). Every key is optional; [`ChoiceSpec::rule`] fills in the defaults. A node's
/// `Choice` is a whole rule: a key it leaves out takes its default, not the conversation's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ChoiceSpec {
    /// `Mode`; absent: `Leader`.
    pub mode: Option<ChoiceMode>,
    /// `TimeLimit`, whole seconds from 1 to [`MAX_TIME_LIMIT_SECS`] (the reader refuses any
    /// other); only `Majority` and `Roll` may say it (the content check refuses the rest).
    pub time_limit: Option<u32>,
    /// `Tie`; only `Majority` may say it.
    pub tie: Option<TieRule>,
}

/// A `Majority` ballot's time limit when the content states none.
pub const DEFAULT_MAJORITY_TIME_LIMIT_SECS: u32 = 30;
/// The longest `TimeLimit` content may state.
pub const MAX_TIME_LIMIT_SECS: u32 = 600;

/// A ballot's rule with every default filled in (PROTOCOL.md section 17.3): what the server
/// decides a shared conversation's choices by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChoiceRule {
    pub mode: ChoiceMode,
    /// When the ballot is decided without waiting for more votes: `Majority` 30 s unless stated,
    /// `Roll` only when stated (else it waits for every participant), `Leader` and `All` never.
    pub time_limit_secs: Option<u32>,
    /// How a `Majority` tie at the time limit is broken (the default for any other mode).
    pub tie: TieRule,
}

impl ChoiceSpec {
    /// The rule this spec states, with the defaults.
    pub fn rule(&self) -> ChoiceRule {
        let mode = self.mode.unwrap_or_default();
        ChoiceRule {
            mode,
            time_limit_secs: match mode {
                ChoiceMode::Majority => {
                    Some(self.time_limit.unwrap_or(DEFAULT_MAJORITY_TIME_LIMIT_SECS))
                }
                ChoiceMode::Roll => self.time_limit,
                ChoiceMode::Leader | ChoiceMode::All => None,
            },
            tie: match mode {
                ChoiceMode::Majority => self.tie.unwrap_or_default(),
                _ => TieRule::default(),
            },
        }
    }
}

/// Where a node goes next when it has no responses: one node, or a list tried in order.
///
/// A list is Banter's extension: it becomes a transparent Branch vertex whose children are tried
/// by priority, and the first whose `Conditions` hold is shown. That is how a conversation
/// branches on state halfway through without a server action (the article's first limitation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    One(String),
    FirstOf(Vec<String>),
    /// A line group (CONTENT.md "Line groups and storylets"): candidates picked by a rule.
    Group(Group),
}

/// How a line group picks among its candidates that hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pick {
    /// The first, in order.
    First,
    /// The one whose `Conditions` make the most tests; the first on a tie.
    MostSpecific,
    /// The one the player saw longest ago; one never seen first.
    LeastRecent,
    /// At random by weight, from the conversation's seed.
    Weighted,
}

impl Pick {
    pub const ALL: [Pick; 4] = [
        Pick::First,
        Pick::MostSpecific,
        Pick::LeastRecent,
        Pick::Weighted,
    ];

    /// The name content writes.
    pub fn name(self) -> &'static str {
        match self {
            Pick::First => "First",
            Pick::MostSpecific => "MostSpecific",
            Pick::LeastRecent => "LeastRecent",
            Pick::Weighted => "Weighted",
        }
    }
}

/// The most candidates a group may have.
pub const MAX_GROUP_CANDIDATES: usize = 64;
/// The largest `Weight`.
pub const MAX_WEIGHT: u32 = 1000;

/// A `NextNode` group: `{ "Pick": ..., "Among": [...], "Fallback": ... }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub pick: Pick,
    /// The candidates' node names, in order.
    pub among: Vec<String>,
    /// Each candidate's `Weight` as written (`None`: not written, 1), in `among`'s order.
    pub weights: Vec<Option<u32>>,
    /// Shown when no candidate holds.
    pub fallback: Option<String>,
}

impl Next {
    /// Every node name this exit refers to, in priority order (a group's candidates, not its
    /// `Fallback`).
    pub fn targets(&self) -> &[String] {
        match self {
            Next::One(name) => std::slice::from_ref(name),
            Next::FirstOf(names) => names,
            Next::Group(group) => &group.among,
        }
    }

    /// Every node name this exit refers to, a group's `Fallback` last.
    pub fn all_targets(&self) -> impl Iterator<Item = &String> {
        let fallback = match self {
            Next::Group(group) => group.fallback.as_ref(),
            _ => None,
        };
        self.targets().iter().chain(fallback)
    }
}

/// A player's response, shown as a button under the NPC line.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    /// The response's stable line id (`LineId`): what string tables and voice-over key its text
    /// by. It survives reordering, inserting and editing; `strings tag` writes missing ones.
    pub line: Option<String>,
    pub text: String,
    pub actions: Vec<Action>,
    pub next: Option<Next>,
    pub conditions: Option<String>,
    /// `Once`: offered until the player has picked it once.
    pub once: bool,
    /// `Disabled`: shown greyed out with this reason when its `Conditions` fail.
    pub disabled: Option<String>,
    /// `DisabledLineId`: the reason's stable line id.
    pub disabled_line: Option<String>,
}

/// How a node ends: at most one of the three exits; none means the conversation ends there.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Exit {
    #[default]
    End,
    Close,
    Next(Next),
    Responses(Vec<Response>),
}

/// A line's recording in the locale it is served in: the clip's path (relative to the content
/// folder) and its length, which the typewriter finishes on. The server fills it in from the
/// voice manifest for each locale it publishes; writers do not write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoiceLine {
    pub clip: String,
    pub millis: u64,
}

/// One named node of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Node {
    /// The line's stable id (`LineId`), as [`Response::line`].
    pub line: Option<String>,
    pub text: String,
    /// A note for the voice actor (`Direction`: "whispering, out of breath"): goes to the
    /// recording script, never to a client.
    pub direction: Option<String>,
    /// The line's recording in the locale served (`Voice`), if it has one.
    pub voice: Option<VoiceLine>,
    pub exit: Exit,
    pub actions: Vec<Action>,
    pub conditions: Option<String>,
    /// `Choice`: how a shared conversation's group picks among this node's responses, when it
    /// differs from the conversation's `Shared`.
    pub choice: Option<ChoiceSpec>,
    /// `Once`: shown at most once per player as a next line or a group's pick.
    pub once: bool,
}

/// A layer's node that changes only the fields it names (Banter's answer to "a layer can't
/// change just the text of a base node").
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodePatch {
    /// A patch that changes `Text` carries the new line's id: the base line's translations
    /// are of another text.
    pub line: Option<String>,
    pub text: Option<String>,
    pub direction: Option<String>,
    pub exit: Option<Exit>,
    pub actions: Option<Vec<Action>>,
    pub conditions: Option<String>,
    pub choice: Option<ChoiceSpec>,
    pub once: Option<bool>,
}

impl NodePatch {
    /// The node with this patch applied.
    pub fn apply(&self, base: &Node) -> Node {
        Node {
            // A patch that changes the text without an id of its own has none: the base line's
            // translations are of another text (the line check reports it).
            line: match (&self.line, &self.text) {
                (Some(line), _) => Some(line.clone()),
                (None, Some(_)) => None,
                (None, None) => base.line.clone(),
            },
            text: self.text.clone().unwrap_or_else(|| base.text.clone()),
            direction: self.direction.clone().or_else(|| base.direction.clone()),
            voice: base.voice.clone(),
            exit: self.exit.clone().unwrap_or_else(|| base.exit.clone()),
            actions: self.actions.clone().unwrap_or_else(|| base.actions.clone()),
            conditions: self.conditions.clone().or_else(|| base.conditions.clone()),
            choice: self.choice.or(base.choice),
            once: self.once.unwrap_or(base.once),
        }
    }
}

/// A node as a file states it: whole, or a patch over a lower layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEntry {
    Whole(Node),
    Patch(NodePatch),
}

/// One parsed file: a base conversation or a layer over one.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConversationFile {
    /// The file it came from, for diagnostics.
    pub file: String,
    pub first_node: Option<String>,
    pub speaker: Option<String>,
    /// `Shared`: the conversation is walked by a party together. Only a base file may say it.
    pub shared: Option<ChoiceSpec>,
    /// Nodes by name. A `BTreeMap` so every later step iterates in one order on every machine.
    pub nodes: BTreeMap<String, NodeEntry>,
}

/// A conversation after the layer union: every node whole.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Conversation {
    pub name: String,
    pub first_node: Option<String>,
    pub speaker: Option<String>,
    /// `Shared`, from the base file: `None` for a conversation each player walks alone.
    pub shared: Option<ChoiceSpec>,
    pub nodes: BTreeMap<String, Node>,
    /// For each node, the file its final version came from (diagnostics name the right file).
    pub origin: BTreeMap<String, String>,
    /// The base file, for problems of the conversation as a whole (a missing `FirstNode`).
    pub base_file: String,
}
