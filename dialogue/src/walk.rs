//! The walk, twice (article sections 6.1, 7.2 and 7.3): one set of rules, used unchanged by the
//! server to validate and by every client to show.
//!
//! The server keeps, per open conversation, a [`Walk`]: the reachable set `R` of vertices the
//! player has been shown, and the armed-action counters `a(n, i)`. It grows by exactly the
//! client's rules:
//!
//! - showing an NPC line adds it to `R` with every response whose `Conditions` hold, and arms the
//!   line's actions;
//! - `advance(n)` is valid only if `n ∈ R` is an NPC line waiting for the player (no response of
//!   it in `R` whose `Conditions` hold now); its next line is shown;
//! - `choose(r)` is valid only if `r ∈ R` is a response whose `Conditions` hold now; it arms
//!   `r`'s actions, and unless `r` carries a CheckQuest, its next line is shown;
//! - a quest check waits for the server: from the moment a response carrying a CheckQuest is
//!   chosen, or a line carrying one is shown, until the server's `jump_to`, every `advance` and
//!   `choose` is refused with `AwaitsJump` (the client cannot know what the jump will show);
//! - `jump_to(t)` is the server's own decision (a quest check's result) and shows `t`.
//!
//! `R` only grows: any line or response in it may be advanced or chosen again, on screen or not,
//! and the client walk ([`crate::ClientWalk`]) answers every input exactly as this walk does.
//!
//! **A shared conversation** (PROTOCOL.md section 17) is one walk for the group, kept by the
//! leader's walk, which every participant's own walk follows. The group's decision moves the
//! leader's walk ([`Walk::group_choose`], decided with the leader's facts); every participant's
//! walk, the leader's client's included, then takes the same step ([`Walk::follow_chosen`],
//! [`Walk::follow_advanced`]) with its own facts. A response's actions are armed on a walk only
//! if that participant was shown the response (it is in their `R`) and its `Conditions` hold for
//! them: a response may win by the votes of those who saw it, and the others follow it to the
//! next line without its actions.
//!
//! "The next line" passes through Branch vertices and falls through, by priority, past targets
//! whose `Conditions` fail. An action of type `τ` with payload `p` runs only if some armed
//! `(n, i)` has `a(n, i) > 0`, type `τ` and the canonical payload `p`; running takes one, and
//! arming is capped at [`ARM_CAP`], so a loop walked many times never stockpiles executions.
//!
//! Every rejection is typed and leaves the walk exactly as it was. The hot path (advance, choose,
//! take_action on a walk whose sets have reached their size) does not allocate.

use banter_protocol::{ActionType, QuestStatus};

use crate::ballot::draw;
use crate::condition::{Counter, Facts, VarRef};
use crate::graph::{ActionIndex, DialogueGraph, LineGroup, Vertex, VertexId, VertexKind};
use crate::model::Pick;

/// The most executions one arming can stockpile (the article's hand-picked 2).
pub const ARM_CAP: u8 = 2;

/// Why a client message was refused. Each maps to a stable wire error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    #[error("no such vertex in this conversation")]
    UnknownVertex,
    #[error("the player has not been shown this")]
    NotReachable,
    #[error("not an NPC line")]
    NotALine,
    #[error("not a response")]
    NotAResponse,
    #[error("this line waits for the player to pick a response")]
    AwaitsChoice,
    #[error("this line waits for the server's jump")]
    AwaitsJump,
    #[error("the response's conditions do not hold")]
    ConditionFailed,
    #[error("the response is shown greyed out: its conditions do not hold")]
    ResponseDisabled,
    #[error("no armed action of this type")]
    NotArmed,
    #[error("an action of this type is armed, but with a different payload")]
    PayloadMismatch,
    #[error("the conversation is closed")]
    Closed,
    #[error("a jump must target an NPC line")]
    BadJumpTarget,
}

/// What a step puts on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// An NPC line. Its visible responses are [`Walk::choices`]; if there are none the player
    /// advances past it; if the vertex `awaits_jump`, the client waits for the server.
    Line(VertexId),
    /// A CheckQuest response was picked: the client waits for the server's jump.
    AwaitJump,
    /// Nothing follows: the conversation ends after this step.
    End,
}

/// One armed action slot: `a(n, i)` for the authored action at `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arming {
    action: ActionIndex,
    remaining: u8,
}

/// What this walk added to one vertex's visit count: how many showings (a line) or picks (a
/// response), and when the last was, as this walk's showing sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    pub vertex: VertexId,
    pub count: u32,
    /// The walk's showing number of the last one (1 for the first line this walk showed).
    pub last: u32,
}

/// Per-conversation walk state: `R`, the arming counters, and what the walk counted (visits,
/// showings, weighted draws). The graph is not in here: it is shared, immutable, by every
/// conversation that walks it, and passed to each call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// Sorted, so membership is a binary search and the state is canonical.
    reachable: Vec<VertexId>,
    /// Sorted by action index.
    armed: Vec<Arming>,
    /// A quest check was chosen or shown and its jump has not come yet.
    awaiting_jump: bool,
    closed: bool,
    /// Visits this walk added, sorted by vertex (PROTOCOL.md 10.1).
    counted: Vec<Counted>,
    /// Showings and picks so far: the sequence [`Counted::last`] is taken from.
    shows: u32,
    /// `Weighted` picks made so far: the next pick's draw index.
    draws: u32,
    /// The conversation's seed for `Weighted` groups (PROTOCOL.md 10.1).
    seed: u64,
}

/// The facts a walk evaluates conditions against: the caller's, with this walk's visit counts
/// added to the stored ones.
struct Seen<'a> {
    facts: &'a dyn Facts,
    graph: &'a DialogueGraph,
    counted: &'a [Counted],
    /// `Weighted` picks the walk has made: the next pick's draw index.
    draws: u32,
    /// The walk's seed for `Weighted` picks.
    seed: u64,
}

impl Seen<'_> {
    fn added(&self, vertex: VertexId) -> Option<&Counted> {
        self.counted
            .binary_search_by_key(&vertex, |c| c.vertex)
            .ok()
            .map(|at| &self.counted[at])
    }

    /// The visit count of `vertex`: stored plus this walk's.
    fn count(&self, vertex: VertexId) -> u32 {
        let stored = self
            .graph
            .vertex(vertex)
            .map_or(0, |v| self.facts.visits(&v.name));
        stored.saturating_add(self.added(vertex).map_or(0, |c| c.count))
    }

    /// `v` is a `Once` vertex already counted.
    fn spent(&self, v: VertexId) -> bool {
        self.graph.vertex(v).is_some_and(|x| x.once) && self.count(v) > 0
    }

    /// `v`'s `Conditions` hold and it is not a spent `Once`: a line that may be a next line, a
    /// response that may be picked.
    fn holds(&self, v: VertexId) -> bool {
        self.graph.condition(v).is_none_or(|c| c.eval(self)) && !self.spent(v)
    }

    /// How recently `line` was shown, to order `LeastRecent` candidates: never (0), stored
    /// (1, its `last_seen`), or in this walk (2, its showing number).
    fn recency(&self, line: VertexId) -> (u8, u64) {
        if let Some(c) = self.added(line) {
            return (2, u64::from(c.last));
        }
        let Some(v) = self.graph.vertex(line) else {
            return (0, 0);
        };
        match self.facts.last_seen(&v.name) {
            Some(last) => (1, last),
            None if self.facts.visits(&v.name) > 0 => (1, 0),
            None => (0, 0),
        }
    }
}

impl Facts for Seen<'_> {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        self.facts.quest_status(quest)
    }
    fn objective_progress(&self, quest: &str, objective: &str) -> u32 {
        self.facts.objective_progress(quest, objective)
    }
    fn has(&self, name: &str) -> bool {
        self.facts.has(name)
    }
    fn counter(&self, counter: Counter) -> i64 {
        self.facts.counter(counter)
    }
    fn variable(&self, name: &str) -> Option<VarRef<'_>> {
        self.facts.variable(name)
    }
    fn visits(&self, vertex: &str) -> u32 {
        let stored = self.facts.visits(vertex);
        match self.graph.find(vertex).and_then(|v| self.added(v)) {
            Some(c) => stored.saturating_add(c.count),
            None => stored,
        }
    }
    fn last_seen(&self, vertex: &str) -> Option<u64> {
        self.facts.last_seen(vertex)
    }
    fn seed(&self) -> u64 {
        self.seed
    }
}

/// A walk's state by value (`R`, the armings, whether it closed), to park it outside the process
/// and take it back on another. Only meaningful with the graph it was taken on: vertex and
/// action indexes are that graph's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalkSnapshot {
    /// The reachable set, by vertex index.
    pub reachable: Vec<u32>,
    /// Each armed action's index and how many runs it has left.
    pub armed: Vec<(u32, u8)>,
    /// A quest check waits for the server's jump (absent in snapshots from before the rule).
    #[serde(default)]
    pub awaiting_jump: bool,
    pub closed: bool,
    /// Visits the walk added: vertex index, count, the walk's showing number of the last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<(u32, u32, u32)>,
    /// Showings and picks so far.
    #[serde(default)]
    pub shows: u32,
    /// `Weighted` picks so far.
    #[serde(default)]
    pub draws: u32,
    /// The seed of `Weighted` picks.
    #[serde(default)]
    pub seed: u64,
}

/// Why a [`WalkSnapshot`] cannot be taken back on a graph.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("vertex {0} is not in the graph")]
    UnknownVertex(u32),
    #[error("action {0} is not in the graph")]
    UnknownAction(u32),
    #[error("action {action} is armed {remaining} times, more than the cap of {ARM_CAP}")]
    OverArmed { action: u32, remaining: u8 },
}

impl Walk {
    /// The walk's state by value.
    pub fn snapshot(&self) -> WalkSnapshot {
        WalkSnapshot {
            reachable: self.reachable.iter().map(|v| v.0).collect(),
            armed: self
                .armed
                .iter()
                .map(|a| (a.action.0, a.remaining))
                .collect(),
            awaiting_jump: self.awaiting_jump,
            closed: self.closed,
            counted: self
                .counted
                .iter()
                .map(|c| (c.vertex.0, c.count, c.last))
                .collect(),
            shows: self.shows,
            draws: self.draws,
            seed: self.seed,
        }
    }

    /// Takes a snapshot back on `graph`, checking every index against it and every arming
    /// against the cap: a snapshot from elsewhere (another process, the store) is input.
    pub fn restore(graph: &DialogueGraph, snapshot: &WalkSnapshot) -> Result<Walk, SnapshotError> {
        let mut reachable = Vec::with_capacity(snapshot.reachable.len());
        for &v in &snapshot.reachable {
            graph
                .vertex(VertexId(v))
                .ok_or(SnapshotError::UnknownVertex(v))?;
            reachable.push(VertexId(v));
        }
        reachable.sort_unstable();
        reachable.dedup();
        let mut armed = Vec::with_capacity(snapshot.armed.len());
        for &(action, remaining) in &snapshot.armed {
            graph
                .action(ActionIndex(action))
                .ok_or(SnapshotError::UnknownAction(action))?;
            if remaining > ARM_CAP {
                return Err(SnapshotError::OverArmed { action, remaining });
            }
            armed.push(Arming {
                action: ActionIndex(action),
                remaining,
            });
        }
        armed.sort_unstable_by_key(|a| a.action);
        armed.dedup_by_key(|a| a.action);
        let mut counted = Vec::with_capacity(snapshot.counted.len());
        for &(v, count, last) in &snapshot.counted {
            graph
                .vertex(VertexId(v))
                .ok_or(SnapshotError::UnknownVertex(v))?;
            counted.push(Counted {
                vertex: VertexId(v),
                count,
                last,
            });
        }
        counted.sort_unstable_by_key(|c| c.vertex);
        counted.dedup_by_key(|c| c.vertex);
        Ok(Walk {
            reachable,
            armed,
            awaiting_jump: snapshot.awaiting_jump,
            closed: snapshot.closed,
            counted,
            shows: snapshot.shows,
            draws: snapshot.draws,
            seed: snapshot.seed,
        })
    }

    /// Opens a walk on `entry` (the resolver's choice) and shows it; its `Weighted` picks draw
    /// from the facts' seed (a client's: the `opened` sheet's).
    pub fn open(
        graph: &DialogueGraph,
        entry: VertexId,
        facts: &dyn Facts,
    ) -> Result<(Walk, Shown), WalkError> {
        Walk::open_seeded(graph, entry, facts, facts.seed())
    }

    /// [`Walk::open`] with the seed the server drew for the conversation.
    pub fn open_seeded(
        graph: &DialogueGraph,
        entry: VertexId,
        facts: &dyn Facts,
        seed: u64,
    ) -> Result<(Walk, Shown), WalkError> {
        let mut walk = Walk {
            seed,
            ..Walk::default()
        };
        let shown = walk.jump_to(graph, entry, facts)?;
        Ok((walk, shown))
    }

    /// The seed `Weighted` picks draw from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The lines a step from `from` (a line advanced past, or a response: `picked`, counted as
    /// the step would count it) could show next when the next-line rule settles on a line
    /// group whose pick depends on more than its order (`MostSpecific`, `LeastRecent`,
    /// `Weighted`): every candidate that holds now, in order. Empty otherwise. For tools that
    /// explore every pick (`test-content --explore`); the walk itself picks one.
    pub fn group_candidates(
        &self,
        graph: &DialogueGraph,
        from: VertexId,
        picked: Option<VertexId>,
        facts: &dyn Facts,
    ) -> Vec<VertexId> {
        let mut walk = self.clone();
        if let Some(response) = picked {
            walk.count(response);
        }
        let seen = walk.seen(graph, facts);
        match seen.settle(graph.outputs(from), 0) {
            Some(Settled::Group(branch, group)) if group.pick != Pick::First => {
                seen.holding(graph.outputs(branch)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// True if the player has been shown `v`.
    pub fn is_reachable(&self, v: VertexId) -> bool {
        self.reachable.binary_search(&v).is_ok()
    }

    /// The reachable set, sorted.
    pub fn reachable(&self) -> &[VertexId] {
        &self.reachable
    }

    /// How many more times the authored action may run.
    pub fn armed(&self, action: ActionIndex) -> u8 {
        self.armed
            .binary_search_by_key(&action, |a| a.action)
            .map_or(0, |i| self.armed[i].remaining)
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// True from a quest check (a CheckQuest response chosen, or a line carrying one shown)
    /// until the server's jump.
    pub fn awaits_jump(&self) -> bool {
        self.awaiting_jump
    }

    /// Bytes this walk holds, on the heap and inline: what one open conversation costs.
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Walk>()
            + self.reachable.capacity() * std::mem::size_of::<VertexId>()
            + self.armed.capacity() * std::mem::size_of::<Arming>()
            + self.counted.capacity() * std::mem::size_of::<Counted>()
    }

    /// The visits this walk added, by vertex: what the server adds to the stored counts when
    /// the conversation ends (PROTOCOL.md 10.1).
    pub fn counted(&self) -> &[Counted] {
        &self.counted
    }

    /// Showings and picks so far (the largest [`Counted::last`]).
    pub fn shows(&self) -> u32 {
        self.shows
    }

    fn seen<'a>(&'a self, graph: &'a DialogueGraph, facts: &'a dyn Facts) -> Seen<'a> {
        Seen {
            facts,
            graph,
            counted: &self.counted,
            draws: self.draws,
            seed: self.seed,
        }
    }

    /// The responses the player may pick under `line` now, in priority order: those in `R`
    /// whose `Conditions` hold against `facts` and that are not a `Once` already picked. None
    /// while a quest check awaits its jump.
    pub fn choices<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        line: VertexId,
        facts: &'g dyn Facts,
    ) -> impl Iterator<Item = VertexId> + 'g {
        let outputs = if self.awaiting_jump {
            &[][..]
        } else {
            graph.outputs(line)
        };
        let seen = self.seen(graph, facts);
        outputs.iter().copied().filter(move |&r| {
            graph
                .vertex(r)
                .is_some_and(|v| v.kind == VertexKind::Response)
                && self.is_reachable(r)
                && seen.holds(r)
        })
    }

    /// The responses under `line` shown greyed out now, in priority order, with their reasons:
    /// those in `R` with a `Disabled` reason whose `Conditions` fail, that are not a `Once`
    /// already picked. None while a quest check awaits its jump.
    pub fn greyed<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        line: VertexId,
        facts: &'g dyn Facts,
    ) -> impl Iterator<Item = (VertexId, &'g str)> + 'g {
        let outputs = if self.awaiting_jump {
            &[][..]
        } else {
            graph.outputs(line)
        };
        let seen = self.seen(graph, facts);
        outputs.iter().copied().filter_map(move |r| {
            let v = graph.vertex(r)?;
            let reason = v.disabled.as_deref()?;
            (v.kind == VertexKind::Response
                && self.is_reachable(r)
                && !seen.spent(r)
                && !seen.holds(r))
            .then_some((r, reason))
        })
    }

    /// Every response under `line` the player has been shown (in `R`), whatever its
    /// `Conditions` say now, in priority order.
    pub fn shown_responses<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        line: VertexId,
    ) -> impl Iterator<Item = VertexId> + 'g {
        graph.outputs(line).iter().copied().filter(move |&r| {
            graph
                .vertex(r)
                .is_some_and(|v| v.kind == VertexKind::Response)
                && self.is_reachable(r)
        })
    }

    /// The vertex `id`, if the walk is open, `id` is reached and is of `kind` (else
    /// `wrong_kind`): what the player's advancing past a line or picking a response acts on.
    fn target_of_move<'g>(
        &self,
        graph: &'g DialogueGraph,
        id: VertexId,
        kind: VertexKind,
        wrong_kind: WalkError,
    ) -> Result<&'g Vertex, WalkError> {
        self.check_open()?;
        let vertex = graph.vertex(id).ok_or(WalkError::UnknownVertex)?;
        if !self.is_reachable(id) {
            return Err(WalkError::NotReachable);
        }
        if vertex.kind != kind {
            return Err(wrong_kind);
        }
        Ok(vertex)
    }

    /// The player advances past the NPC line `line`.
    pub fn advance(
        &mut self,
        graph: &DialogueGraph,
        line: VertexId,
        facts: &dyn Facts,
    ) -> Result<Shown, WalkError> {
        let vertex = self.target_of_move(graph, line, VertexKind::Prompt, WalkError::NotALine)?;
        if vertex.awaits_jump || self.awaiting_jump {
            return Err(WalkError::AwaitsJump);
        }
        if self.choices(graph, line, facts).next().is_some() {
            return Err(WalkError::AwaitsChoice);
        }
        Ok(self.follow(graph, line, facts))
    }

    /// The player picks the response `response`.
    pub fn choose(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
    ) -> Result<Shown, WalkError> {
        let vertex = self.target_of_move(
            graph,
            response,
            VertexKind::Response,
            WalkError::NotAResponse,
        )?;
        if self.awaiting_jump {
            return Err(WalkError::AwaitsJump);
        }
        // Authoritative: the facts may have changed since the response was shown.
        let seen = self.seen(graph, facts);
        if !seen.holds(response) {
            return Err(if vertex.disabled.is_some() && !seen.spent(response) {
                WalkError::ResponseDisabled
            } else {
                WalkError::ConditionFailed
            });
        }
        self.arm(graph, response);
        self.count(response);
        if vertex.awaits_jump {
            self.awaiting_jump = true;
            return Ok(Shown::AwaitJump);
        }
        Ok(self.follow(graph, response, facts))
    }

    /// Runs one armed action if the client's type and payload match an armed authored action.
    pub fn take_action(
        &mut self,
        graph: &DialogueGraph,
        action_type: ActionType,
        payload: &str,
    ) -> Result<ActionIndex, WalkError> {
        let index = self.check_action(graph, action_type, payload)?;
        self.spend(index);
        Ok(index)
    }

    /// Finds the armed action a client's type and payload name, without spending it. The server
    /// checks, then commits the action's effect, then [`Walk::spend`]s: an effect that fails
    /// (a quest in the wrong state, a store outage) leaves the arming for a retry.
    pub fn check_action(
        &self,
        graph: &DialogueGraph,
        action_type: ActionType,
        payload: &str,
    ) -> Result<ActionIndex, WalkError> {
        self.check_open()?;
        let mut type_armed = false;
        for arming in &self.armed {
            if arming.remaining == 0 {
                continue;
            }
            let Some(authored) = graph.action(arming.action) else {
                continue;
            };
            if authored.action_type != action_type {
                continue;
            }
            if *authored.payload == *payload {
                return Ok(arming.action);
            }
            type_armed = true;
        }
        Err(if type_armed {
            WalkError::PayloadMismatch
        } else {
            WalkError::NotArmed
        })
    }

    /// Spends one arming of `index` (found by [`Walk::check_action`]). Returns false, and
    /// changes nothing, if it has none left.
    pub fn spend(&mut self, index: ActionIndex) -> bool {
        match self.armed.binary_search_by_key(&index, |a| a.action) {
            Ok(at) if self.armed[at].remaining > 0 => {
                self.armed[at].remaining -= 1;
                true
            }
            _ => false,
        }
    }

    /// The leader's walk applies the group's decision (PROTOCOL.md section 17.2): `response`
    /// won the ballot on its line. The response need not be in `R` (others may have voted it
    /// in), but its line must be. Its actions are armed only if it is in `R` and its
    /// `Conditions` hold for `facts`; then, unless it awaits a quest check's jump, its next line
    /// is shown with `facts` (the leader's). Every refusal changes nothing.
    pub fn group_choose(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
    ) -> Result<Shown, WalkError> {
        let vertex = self.decided(graph, response)?;
        self.arm_if_shown(graph, response, facts);
        if vertex.awaits_jump {
            self.awaiting_jump = true;
            return Ok(Shown::AwaitJump);
        }
        Ok(self.follow(graph, response, facts))
    }

    /// A participant's walk follows the group's decision (`chosen`): `response` won, and
    /// `node` is the line the leader's walk showed next (`None`: a quest check's jump is
    /// awaited, or the conversation ends there). The response's actions are armed only if it
    /// is in `R` and its `Conditions` hold for `facts` (this participant's); `node` is shown as
    /// [`Walk::jump_to`] shows it, with `facts`. Refused, changing nothing, as
    /// [`Walk::group_choose`] is, and for a `node` that is not an NPC line.
    pub fn follow_chosen(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        node: Option<VertexId>,
        facts: &dyn Facts,
    ) -> Result<(), WalkError> {
        let vertex = self.decided(graph, response)?;
        if let Some(node) = node {
            check_line(graph, node)?;
        }
        self.arm_if_shown(graph, response, facts);
        match node {
            Some(node) => self.show(graph, node, facts),
            None if vertex.awaits_jump => self.awaiting_jump = true,
            // The conversation ends here: nothing more is shown or armed.
            None => {}
        }
        Ok(())
    }

    /// A participant's walk follows the leader's advance (`advanced`): `node` is the line
    /// shown next, as [`Walk::jump_to`] shows it, with `facts`; `None`: the conversation ends
    /// there. Refused, changing nothing, when the walk is closed, a quest check awaits its jump
    /// (the leader could not have advanced), or `node` is not an NPC line.
    pub fn follow_advanced(
        &mut self,
        graph: &DialogueGraph,
        node: Option<VertexId>,
        facts: &dyn Facts,
    ) -> Result<(), WalkError> {
        self.check_open()?;
        if self.awaiting_jump {
            return Err(WalkError::AwaitsJump);
        }
        if let Some(node) = node {
            check_line(graph, node)?;
            self.show(graph, node, facts);
        }
        Ok(())
    }

    /// True if the player was shown `response` and its `Conditions` hold for `facts` now:
    /// what a group's decision needs to arm it on this walk.
    pub fn shown_and_holds(
        &self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
    ) -> bool {
        self.is_reachable(response) && self.seen(graph, facts).holds(response)
    }

    /// The checks of a group's decision, in order: the walk is open, `response` is a response
    /// of the graph whose line the player was shown, and no quest check awaits its jump.
    fn decided<'g>(
        &self,
        graph: &'g DialogueGraph,
        response: VertexId,
    ) -> Result<&'g Vertex, WalkError> {
        self.check_open()?;
        let vertex = graph.vertex(response).ok_or(WalkError::UnknownVertex)?;
        if vertex.kind != VertexKind::Response {
            return Err(WalkError::NotAResponse);
        }
        if !graph
            .line_of(response)
            .is_some_and(|l| self.is_reachable(l))
        {
            return Err(WalkError::NotReachable);
        }
        if self.awaiting_jump {
            return Err(WalkError::AwaitsJump);
        }
        Ok(vertex)
    }

    /// A group's decision on this walk: the response's actions are armed if it was shown and
    /// holds; it is counted as picked if it was shown.
    fn arm_if_shown(&mut self, graph: &DialogueGraph, response: VertexId, facts: &dyn Facts) {
        if self.shown_and_holds(graph, response, facts) {
            self.arm(graph, response);
        }
        if self.is_reachable(response) {
            self.count(response);
        }
    }

    /// Adds one to `v`'s visits in this walk.
    fn count(&mut self, v: VertexId) {
        self.shows = self.shows.saturating_add(1);
        let last = self.shows;
        match self.counted.binary_search_by_key(&v, |c| c.vertex) {
            Ok(at) => {
                let c = &mut self.counted[at];
                c.count = c.count.saturating_add(1);
                c.last = last;
            }
            Err(at) => self.counted.insert(
                at,
                Counted {
                    vertex: v,
                    count: 1,
                    last,
                },
            ),
        }
    }

    /// The server's own decision (a quest check's result): show `target` and tell the client.
    pub fn jump_to(
        &mut self,
        graph: &DialogueGraph,
        target: VertexId,
        facts: &dyn Facts,
    ) -> Result<Shown, WalkError> {
        self.check_open()?;
        let vertex = graph.vertex(target).ok_or(WalkError::UnknownVertex)?;
        if vertex.kind != VertexKind::Prompt {
            return Err(WalkError::BadJumpTarget);
        }
        self.awaiting_jump = false;
        self.show(graph, target, facts);
        Ok(Shown::Line(target))
    }

    /// Ends the conversation: every later message is refused.
    pub fn close(&mut self) {
        self.closed = true;
    }

    fn check_open(&self) -> Result<(), WalkError> {
        if self.closed {
            Err(WalkError::Closed)
        } else {
            Ok(())
        }
    }

    /// Shows the line that follows `from` (a line or a response), if any.
    fn follow(&mut self, graph: &DialogueGraph, from: VertexId, facts: &dyn Facts) -> Shown {
        let (line, drew) = self.seen(graph, facts).next_line(graph.outputs(from), 0);
        if drew {
            self.draws = self.draws.saturating_add(1);
        }
        match line {
            Some(line) => {
                self.show(graph, line, facts);
                Shown::Line(line)
            }
            None => Shown::End,
        }
    }

    /// Shows an NPC line: it is counted, then it and its visible responses join `R` (those
    /// that hold, and those shown greyed out), and its actions are armed. Its responses see the
    /// line's count with this showing, when shown and when picked alike.
    fn show(&mut self, graph: &DialogueGraph, line: VertexId, facts: &dyn Facts) {
        self.count(line);
        self.insert_reachable(line);
        self.arm(graph, line);
        if graph.vertex(line).is_some_and(|v| v.awaits_jump) {
            self.awaiting_jump = true;
        }
        for &r in graph.outputs(line) {
            let Some(v) = graph.vertex(r) else { continue };
            if v.kind != VertexKind::Response {
                continue;
            }
            let shown = {
                let seen = Seen {
                    facts,
                    graph,
                    counted: &self.counted,
                    draws: self.draws,
                    seed: self.seed,
                };
                !seen.spent(r) && (v.disabled.is_some() || seen.holds(r))
            };
            if shown {
                self.insert_reachable(r);
            }
        }
    }

    fn insert_reachable(&mut self, v: VertexId) {
        if let Err(at) = self.reachable.binary_search(&v) {
            self.reachable.insert(at, v);
        }
    }

    /// Adds one arming to every action authored on `v`, capped at [`ARM_CAP`].
    fn arm(&mut self, graph: &DialogueGraph, v: VertexId) {
        for (index, _) in graph.actions(v) {
            match self.armed.binary_search_by_key(&index, |a| a.action) {
                Ok(at) => {
                    let slot = &mut self.armed[at];
                    slot.remaining = (slot.remaining + 1).min(ARM_CAP);
                }
                Err(at) => self.armed.insert(
                    at,
                    Arming {
                        action: index,
                        remaining: 1,
                    },
                ),
            }
        }
    }
}

/// `node` is an NPC line of `graph`: what a group's step and a jump may show.
fn check_line(graph: &DialogueGraph, node: VertexId) -> Result<(), WalkError> {
    match graph.vertex(node) {
        None => Err(WalkError::UnknownVertex),
        Some(v) if v.kind != VertexKind::Prompt => Err(WalkError::BadJumpTarget),
        Some(_) => Ok(()),
    }
}

/// The NPC line that follows `from` by the client rule, for a walk that has shown nothing yet
/// (no visits of its own, no draws made): the first output by priority that holds, passing
/// through Branch (and Condition) vertices and picking in line groups. Responses are not lines.
pub fn next_line(graph: &DialogueGraph, from: VertexId, facts: &dyn Facts) -> Option<VertexId> {
    Seen {
        facts,
        graph,
        counted: &[],
        draws: 0,
        seed: facts.seed(),
    }
    .next_line(graph.outputs(from), 0)
    .0
}

/// Branches hold only Prompts by construction; the depth bound keeps a hand-built graph with
/// nested transparent vertices from recursing without end.
const MAX_TRANSPARENT_DEPTH: usize = 8;

/// Where the next-line rule settles among a vertex's outputs: one line, or a line group that
/// will pick (it has a candidate that holds, or a `Fallback`).
enum Settled<'g> {
    Line(VertexId),
    Group(VertexId, &'g LineGroup),
}

impl<'g> Seen<'g> {
    /// The first of `outputs` that settles, by priority: a line that holds, or a line group
    /// with something to show, passing through other Branch (and Condition) vertices.
    fn settle(&self, outputs: &[VertexId], depth: usize) -> Option<Settled<'g>> {
        let graph = self.graph;
        for &out in outputs {
            let Some(v) = graph.vertex(out) else { continue };
            if graph.condition(out).is_some_and(|c| !c.eval(self)) {
                continue;
            }
            match (v.kind, graph.group(out)) {
                (VertexKind::Prompt, _) if !self.spent(out) => return Some(Settled::Line(out)),
                (VertexKind::Branch, Some(group)) => {
                    let mut holding = self.holding(graph.outputs(out));
                    if holding.next().is_some() || group.fallback.is_some() {
                        return Some(Settled::Group(out, group));
                    }
                }
                (VertexKind::Branch | VertexKind::Condition | VertexKind::Action, _)
                    if depth < MAX_TRANSPARENT_DEPTH =>
                {
                    if let found @ Some(_) = self.settle(graph.outputs(out), depth + 1) {
                        return found;
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The first of `outputs` that holds, by priority: a line, or a line group's pick. Also
    /// whether a `Weighted` pick used a draw.
    fn next_line(&self, outputs: &[VertexId], depth: usize) -> (Option<VertexId>, bool) {
        match self.settle(outputs, depth) {
            Some(Settled::Line(line)) => (Some(line), false),
            Some(Settled::Group(branch, group)) => self.pick(self.graph.outputs(branch), group),
            None => (None, false),
        }
    }

    /// The candidates among `candidates` that hold: lines whose `Conditions` hold that are not
    /// a `Once` already shown, in order.
    fn holding<'a>(
        &'a self,
        candidates: &'a [VertexId],
    ) -> impl Iterator<Item = VertexId> + Clone + 'a {
        candidates.iter().copied().filter(|&c| {
            self.graph
                .vertex(c)
                .is_some_and(|v| v.kind == VertexKind::Prompt)
                && self.holds(c)
        })
    }

    /// A line group's pick among `candidates` (PROTOCOL.md 10.1), its `Fallback` when none
    /// holds; and whether a `Weighted` pick used a draw.
    fn pick(&self, candidates: &[VertexId], group: &LineGroup) -> (Option<VertexId>, bool) {
        let mut holding = self.holding(candidates);
        let (picked, drew) = match group.pick {
            Pick::First => (holding.next(), false),
            Pick::MostSpecific => {
                let tests = |c: VertexId| self.graph.condition(c).map_or(0, |x| x.tests());
                // The first of the most specific: a later one must make strictly more tests.
                let best = holding.fold(None, |best: Option<VertexId>, c| match best {
                    Some(b) if tests(b) >= tests(c) => Some(b),
                    _ => Some(c),
                });
                (best, false)
            }
            Pick::LeastRecent => {
                let best = holding.fold(None, |best: Option<VertexId>, c| match best {
                    Some(b) if self.recency(b) <= self.recency(c) => Some(b),
                    _ => Some(c),
                });
                (best, false)
            }
            Pick::Weighted => {
                let weight = |c: VertexId| {
                    candidates
                        .iter()
                        .position(|&x| x == c)
                        .and_then(|at| group.weights.get(at))
                        .map_or(1, |w| u64::from(*w))
                };
                let total: u64 = holding.clone().map(weight).sum();
                if total == 0 {
                    (None, false)
                } else {
                    let k = self.draws;
                    let r = draw(self.seed, u64::from(k)) % total;
                    let mut sum = 0;
                    let picked = holding.find(|&c| {
                        sum += weight(c);
                        sum > r
                    });
                    (picked, true)
                }
            }
        };
        match picked {
            Some(line) => (Some(line), drew),
            None => (group.fallback, drew),
        }
    }
}
