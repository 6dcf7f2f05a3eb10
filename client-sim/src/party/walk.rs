//! One member's client following the group's walk of a shared conversation: the member's own
//! `ClientWalk` moved by the group's `chosen`, `advanced` and `jump`, its votes in join order
//! until the ballot is decided, the leader's advances, and its own armed actions.

use std::collections::VecDeque;
use std::sync::Arc;

use banter_dialogue::content::Content;
use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, VertexId, ballot};
use banter_protocol::{FactSheet, ServerMessage};
use rand::seq::IndexedRandom;
use tokio::time::Instant;

use super::member::MemberStats;
use super::{JOIN_PATIENCE, STALL, TURN_PATIENCE};
use crate::bot::{SimRng, response_score_within};
use crate::error::{Result, SimError};
use crate::facts::ClientFacts;
use crate::pace::ReadingPace;
use crate::session::{OpenConversation, Session, refused, wire};

/// What a member does next in a shared walk.
enum Step {
    Vote(VertexId),
    Advance(VertexId),
    /// Nothing until a message comes, or this instant.
    Wait(Instant),
}

/// One member's client following the group's walk.
pub(super) struct GroupWalk {
    graph: Arc<DialogueGraph>,
    pub(super) walk: ClientWalk,
    queue: VecDeque<Outgoing>,
    me: String,
    leader: String,
    participants: Vec<String>,
    party_size: usize,
    pace: ReadingPace,
    /// The line the ballot is on (the line on screen), and the votes seen on it, in the order
    /// first cast.
    line: Option<VertexId>,
    votes: Vec<(String, VertexId)>,
    /// This member's vote or advance already sent on the line on screen.
    acted: bool,
    /// When the line on screen has been read.
    ready_at: Instant,
    /// Until when the conversation waits for the party's members to be taken in.
    join_until: Instant,
    last_progress: Instant,
    /// Members never taken in by [`JOIN_PATIENCE`] (the leader reports it): how many were in.
    pub(super) never_joined: Option<usize>,
}

impl GroupWalk {
    pub(super) fn open(
        open: &OpenConversation,
        me: &str,
        party_size: usize,
        pace: ReadingPace,
        facts: &FactSheet,
    ) -> Result<GroupWalk> {
        let shared = open
            .shared
            .as_ref()
            .ok_or_else(|| SimError::Protocol("not a shared conversation".into()))?;
        let leads = shared.leader == me;
        let mut out = Vec::new();
        let walk = ClientWalk::open_shared(&open.graph, open.entry, facts, leads, &mut out)
            .map_err(walk_error)?;
        let votes = shared
            .votes
            .iter()
            .filter_map(|v| Some((v.player.clone(), open.graph.find(&v.response)?)))
            .collect();
        let now = Instant::now();
        let mut group = GroupWalk {
            graph: open.graph.clone(),
            walk,
            queue: out.into_iter().collect(),
            me: me.to_owned(),
            leader: shared.leader.clone(),
            participants: shared.participants.clone(),
            party_size,
            pace,
            line: None,
            votes: Vec::new(),
            acted: false,
            ready_at: now,
            join_until: now + JOIN_PATIENCE,
            last_progress: now,
            never_joined: None,
        };
        group.shown();
        group.votes = votes;
        Ok(group)
    }

    fn leads(&self) -> bool {
        self.leader == self.me
    }

    /// The walk moved: a new line (or none) is on screen, with a new ballot.
    fn shown(&mut self) {
        let now = Instant::now();
        self.votes.clear();
        self.acted = false;
        self.line = match self.walk.screen() {
            Screen::Line(line) => Some(line),
            Screen::Waiting | Screen::Ended => None,
        };
        let text = self
            .line
            .and_then(|l| self.graph.vertex(l))
            .map_or("", |v| &v.text);
        self.ready_at = now + self.pace.reading_time(text);
        self.last_progress = now;
    }

    fn vertex(&self, name: &str) -> Result<VertexId> {
        self.graph
            .find(name)
            .ok_or_else(|| SimError::Protocol(format!("`{name}` is not in the conversation")))
    }

    pub(super) async fn run(
        &mut self,
        session: &mut Session,
        content: &Content,
        rng: &mut SimRng,
        stats: &mut MemberStats,
    ) -> Result<()> {
        loop {
            while let Some(step) = self.queue.pop_front() {
                let voting = matches!(step, Outgoing::Choose(_));
                let reply = session.request(wire(&self.graph, step)?).await?;
                if voting
                    && reply.answer.is_ok()
                    && !reply.messages.iter().any(
                        |m| matches!(m, ServerMessage::Voted { player, .. } if *player == self.me),
                    )
                {
                    stats.problems.push(format!(
                        "{}: a vote was acknowledged without its `voted` (PROTOCOL.md 17.2)",
                        self.me
                    ));
                }
                refused(reply)?;
                self.last_progress = Instant::now();
            }
            while let Some(message) = session.next_group_message() {
                self.handle(session, message, stats)?;
            }
            if !self.queue.is_empty() {
                continue;
            }
            if self.walk.screen() == Screen::Ended {
                return Ok(());
            }
            let facts = session.facts.sheet.clone();
            let wake = match self.next_step(content, &facts, rng) {
                Step::Vote(response) => {
                    let mut out = Vec::new();
                    self.walk
                        .vote(&self.graph, response, &facts, &mut out)
                        .map_err(|e| SimError::Other(format!("client walk: {e}")))?;
                    self.queue.extend(out);
                    self.acted = true;
                    stats.votes += 1;
                    continue;
                }
                Step::Advance(line) => {
                    let mut out = Vec::new();
                    self.walk
                        .propose_advance(&self.graph, line, &facts, &mut out)
                        .map_err(|e| SimError::Other(format!("client walk: {e}")))?;
                    self.queue.extend(out);
                    self.acted = true;
                    stats.advances += 1;
                    continue;
                }
                Step::Wait(until) => until,
            };
            let stalled_at = self.last_progress + STALL;
            let now = Instant::now();
            if now >= stalled_at {
                let line = self
                    .line
                    .and_then(|l| self.graph.vertex(l))
                    .map_or("(none)".to_owned(), |v| v.name.to_string());
                return Err(SimError::Other(format!(
                    "the shared walk stalled on line {line}: nothing for {}s \
                     ({} participants, {} votes seen)",
                    STALL.as_secs(),
                    self.participants.len(),
                    self.votes.len()
                )));
            }
            let patience = wake.min(stalled_at).saturating_duration_since(now);
            if let Some(message) = session.wait_group_message(patience).await? {
                self.handle(session, message, stats)?;
            }
        }
    }

    /// The member's own next step on the line on screen.
    fn next_step(&mut self, content: &Content, facts: &FactSheet, rng: &mut SimRng) -> Step {
        let far = Instant::now() + STALL;
        let Screen::Line(line) = self.walk.screen() else {
            return Step::Wait(far);
        };
        let now = Instant::now();
        if self.acted {
            return Step::Wait(far);
        }
        if now < self.ready_at {
            return Step::Wait(self.ready_at);
        }
        if self.participants.len() < self.party_size {
            if now < self.join_until {
                return Step::Wait(self.join_until);
            }
            self.never_joined.get_or_insert(self.participants.len());
        }
        let choices: Vec<VertexId> = self.walk.choices(&self.graph, facts).collect();
        if choices.is_empty() {
            return if self.walk.can_advance(&self.graph, facts) {
                Step::Advance(line)
            } else {
                Step::Wait(far)
            };
        }
        if self.votes.iter().any(|(p, _)| *p == self.me) {
            return Step::Wait(far);
        }
        let Some(rule) = self.graph.choice_rule(line) else {
            return Step::Wait(far);
        };
        // The members before this one in join order vote first.
        let at = self
            .participants
            .iter()
            .position(|p| *p == self.me)
            .unwrap_or(self.participants.len());
        let earlier_missing = self.participants[..at]
            .iter()
            .any(|p| !self.votes.iter().any(|(v, _)| v == p));
        let turn_over = self.ready_at + TURN_PATIENCE;
        if earlier_missing && now < turn_over {
            return Step::Wait(turn_over);
        }
        // Decided by the votes cast already: the `chosen` is on its way, a vote now would come
        // after it.
        let names: Vec<&str> = self.participants.iter().map(String::as_str).collect();
        let cast: Vec<(&str, VertexId)> =
            self.votes.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        if ballot::decide(&self.graph, &rule, &names, &self.leader, &cast, false, 0).is_some() {
            return Step::Wait(far);
        }
        let first = self
            .votes
            .first()
            .map(|(_, r)| *r)
            .filter(|r| choices.contains(r));
        let pick = first.or_else(|| self.best(content, facts, &choices, rng));
        match pick {
            Some(response) => Step::Vote(response),
            None => Step::Wait(far),
        }
    }

    /// The response that moves the quests on most at once (a response and the line it leads
    /// to); of equals, one at random.
    fn best(
        &self,
        content: &Content,
        facts: &FactSheet,
        choices: &[VertexId],
        rng: &mut SimRng,
    ) -> Option<VertexId> {
        let mut client = ClientFacts::fresh(content);
        client.opened(content, facts);
        let scored: Vec<(VertexId, i32)> = choices
            .iter()
            .map(|&c| {
                (
                    c,
                    response_score_within(content, &self.graph, c, &client, 1),
                )
            })
            .collect();
        let top = scored.iter().map(|(_, s)| *s).max()?;
        let best: Vec<VertexId> = scored
            .iter()
            .filter(|(_, s)| *s == top)
            .map(|(c, _)| *c)
            .collect();
        best.choose(rng).copied()
    }

    /// Takes one message of the group's.
    fn handle(
        &mut self,
        session: &Session,
        message: ServerMessage,
        stats: &mut MemberStats,
    ) -> Result<()> {
        let facts = &session.facts.sheet;
        let mut out = Vec::new();
        match message {
            ServerMessage::Voted { player, response } => {
                let response = self.vertex(&response)?;
                if self.line.is_some() && self.graph.line_of(response) == self.line {
                    match self.votes.iter_mut().find(|(p, _)| *p == player) {
                        Some(vote) => vote.1 = response,
                        None => self.votes.push((player, response)),
                    }
                }
                self.last_progress = Instant::now();
            }
            ServerMessage::Chosen {
                response,
                node,
                by,
                votes,
                ..
            } => {
                let response = self.vertex(&response)?;
                let node = node.as_deref().map(|n| self.vertex(n)).transpose()?;
                let mut voters: Vec<&str> = votes.iter().map(|v| v.player.as_str()).collect();
                voters.sort_unstable();
                let counted = voters.len();
                voters.dedup();
                if voters.len() != counted {
                    stats.problems.push(format!(
                        "{}: a `chosen` counted one voter more than once: {votes:?}",
                        self.me
                    ));
                }
                self.walk
                    .follow_chosen(&self.graph, response, node, facts, &mut out)
                    .map_err(walk_error)?;
                if self.leads() {
                    let by: &'static str = by.into();
                    *stats.ballots.entry(by.to_owned()).or_insert(0) += 1;
                }
                self.queue.extend(out);
                self.shown();
            }
            ServerMessage::Advanced { node, .. } => {
                let node = node.as_deref().map(|n| self.vertex(n)).transpose()?;
                self.walk
                    .follow_advanced(&self.graph, node, facts, &mut out)
                    .map_err(walk_error)?;
                self.queue.extend(out);
                self.shown();
            }
            ServerMessage::Jump { node } => {
                let node = self.vertex(&node)?;
                self.walk
                    .jump(&self.graph, node, facts, &mut out)
                    .map_err(walk_error)?;
                self.queue.extend(out);
                self.shown();
            }
            ServerMessage::Participants {
                leader,
                participants,
                joined,
                left,
                ..
            } => {
                if !roster_after(&mut self.participants, &participants, joined, left) {
                    // Its list is not the set now (two joins or leaves delivered in the opposite
                    // order): the changes it names were taken instead.
                    stats.rosters_out_of_order += 1;
                }
                if self.participants.contains(&leader) {
                    self.walk.set_leader(leader == self.me);
                    self.leader = leader;
                }
                self.last_progress = Instant::now();
            }
            ServerMessage::Closed { reason } if self.walk.screen() != Screen::Ended => {
                return Err(SimError::Protocol(format!(
                    "the server closed the shared conversation ({reason:?}) while it went on"
                )));
            }
            ServerMessage::Opened { conversation, .. } => {
                return Err(SimError::Protocol(format!(
                    "`{conversation}` opened while a shared conversation was open"
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

/// Applies a `participants` message to the roster a member holds, in join order: who joined is
/// added (before anyone the message does not list, who joined after), who left is removed. The
/// server pushes the rosters of two joins (or two leaves) that happen at once from each joiner's
/// own session, so they may arrive in the opposite order: the message's own list is then not the
/// set now, and taking it whole would lose a participant (or bring back one who left). A
/// participant's own join and leave come in order, so the changes add up whatever the order. A
/// message naming no change (leadership passed) is taken as it lists. False when the message's
/// list is not the roster it leaves (it came out of order).
fn roster_after(
    roster: &mut Vec<String>,
    listed: &[String],
    joined: Option<String>,
    left: Option<String>,
) -> bool {
    match (joined, left) {
        (None, None) => listed.clone_into(roster),
        (joined, left) => {
            if let Some(left) = &left {
                roster.retain(|p| p != left);
            }
            if let Some(joined) = joined
                && !roster.contains(&joined)
            {
                let at = roster
                    .iter()
                    .position(|p| !listed.contains(p))
                    .unwrap_or(roster.len());
                roster.insert(at, joined);
            }
        }
    }
    roster.as_slice() == listed
}

fn walk_error(e: banter_dialogue::WalkError) -> SimError {
    SimError::Other(format!("client walk: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn rosters_delivered_out_of_order_add_up_to_the_set_in_join_order() {
        // B and C joined A's conversation at once; A hears C's roster before B's.
        let mut roster = names(&["a"]);
        assert!(!roster_after(
            &mut roster,
            &names(&["a", "b", "c"]),
            Some("c".into()),
            None
        ));
        assert_eq!(roster, names(&["a", "c"]));
        assert!(!roster_after(
            &mut roster,
            &names(&["a", "b"]),
            Some("b".into()),
            None
        ));
        assert_eq!(
            roster,
            names(&["a", "b", "c"]),
            "B before C, as they joined"
        );
        // In order, every roster is the set now.
        let mut roster = names(&["a"]);
        assert!(roster_after(
            &mut roster,
            &names(&["a", "b"]),
            Some("b".into()),
            None
        ));
        assert!(roster_after(
            &mut roster,
            &names(&["a", "b", "c"]),
            Some("c".into()),
            None
        ));
        // Two leaves at once, heard in the opposite order.
        assert!(!roster_after(
            &mut roster,
            &names(&["a"]),
            None,
            Some("b".into())
        ));
        assert!(roster_after(
            &mut roster,
            &names(&["a"]),
            None,
            Some("c".into())
        ));
        assert_eq!(roster, names(&["a"]));
        // B joined, C joined, B left; C's roster (listing B) comes last: B stays gone.
        let mut roster = names(&["a", "b"]);
        assert!(roster_after(
            &mut roster,
            &names(&["a"]),
            None,
            Some("b".into())
        ));
        assert!(!roster_after(
            &mut roster,
            &names(&["a", "b", "c"]),
            Some("c".into()),
            None
        ));
        assert_eq!(roster, names(&["a", "c"]));
        // A roster naming no change (leadership passed) is taken as it is.
        assert!(roster_after(&mut roster, &names(&["c", "a"]), None, None));
        assert_eq!(roster, names(&["c", "a"]));
    }
}
