//! What one conversation did, as it happens: the lines it showed, the responses chosen, how long
//! each line stayed on screen, the quests it offered and accepted, and how it ended.
//!
//! Pure: no clock (the session passes its server time) and no names. Events are vertex and
//! action indexes into the conversation's own graph, counted as they come (a cheap hash and an
//! increment each), so a tally holds each distinct event once however long the conversation
//! loops; the names are looked up once per distinct event, when the conversation ends and its
//! tally joins the rollup ([`super::Analytics::conversation_ended`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use banter_dialogue::{ActionIndex, DialogueGraph, Shown, VertexId, Walk};
use banter_protocol::Action;

/// How a conversation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ending {
    /// The walk reached its end on the player's own steps.
    Completed,
    /// The walk reached its end on a branch a server jump (a quest check) chose.
    Jumped,
    /// The player closed it before its end.
    Closed,
    /// The player walked out of the NPC's reach.
    WalkedAway,
    /// The connection ended with the conversation open (dropped, or the client left the game).
    /// A conversation resumed later is tallied again from its resume.
    Disconnected,
}

impl Ending {
    pub const ALL: [Ending; 5] = [
        Ending::Completed,
        Ending::Jumped,
        Ending::Closed,
        Ending::WalkedAway,
        Ending::Disconnected,
    ];

    /// The name in the rollup and the report.
    pub fn name(self) -> &'static str {
        match self {
            Ending::Completed => "completed",
            Ending::Jumped => "jumped",
            Ending::Closed => "closed",
            Ending::WalkedAway => "walked_away",
            Ending::Disconnected => "disconnected",
        }
    }

    pub fn parse(name: &str) -> Option<Ending> {
        Ending::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One thing a conversation did, by index into its graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TallyEvent {
    /// Opened on this entry line (a resumed conversation has no `Open`).
    Open(VertexId),
    /// A line was shown.
    Visit(VertexId),
    /// `response` was chosen under `line` (`None`: the line is not known, after a resume).
    Choice {
        line: Option<VertexId>,
        response: VertexId,
    },
    /// `line` stayed on screen this long, as a [`super::buckets`] index.
    LineTime { line: VertexId, bucket: u8 },
    /// An `AcceptQuest` came on screen (on a line or one of its responses).
    Offer(ActionIndex),
    /// An `AcceptQuest` was committed.
    Accept(ActionIndex),
    /// The conversation ended, at this line if one was on screen.
    End { how: Ending, at: Option<VertexId> },
}

/// One open conversation's events so far.
#[derive(Clone, Debug, Default)]
pub struct ConversationTally {
    /// Every distinct event with how often it came, in the order each first came: a
    /// conversation that loops for hours (or a client that drives one as fast as its rate limit
    /// lets it) holds its few distinct events, not every step.
    counts: Vec<(TallyEvent, i64)>,
    /// Where each event's count is in `counts`.
    index: HashMap<TallyEvent, usize, BuildHasherDefault<EventHasher>>,
    /// The line on screen and when it was shown.
    line: Option<(VertexId, Duration)>,
    /// The last line shown (still on screen or not): where the conversation ends.
    last_line: Option<VertexId>,
    /// The walk reached its end; `Some(true)` if a jump chose the branch.
    reached_end: Option<bool>,
    /// A server jump was taken since the last line the player chose their way to.
    on_jumped_branch: bool,
}

impl ConversationTally {
    /// A conversation opened on `entry`, which the walk shows at `now`.
    pub fn opened(graph: &DialogueGraph, walk: &Walk, entry: VertexId, now: Duration) -> Self {
        let mut tally = ConversationTally::default();
        tally.push(TallyEvent::Open(entry));
        tally.show(graph, walk, entry, now);
        tally
    }

    /// A conversation taken back by a resume: the line on screen is not known until the next
    /// step shows one.
    pub fn resumed() -> Self {
        ConversationTally::default()
    }

    /// The player advanced or chose, and the walk answered `shown` at `now`.
    pub fn stepped(&mut self, graph: &DialogueGraph, walk: &Walk, shown: Shown, now: Duration) {
        match shown {
            Shown::Line(line) => {
                self.leave_line(now);
                self.on_jumped_branch = false;
                self.show(graph, walk, line, now);
            }
            Shown::End => {
                self.leave_line(now);
                self.reached_end = Some(self.on_jumped_branch);
            }
            // The line stays on screen until the server's jump replaces it.
            Shown::AwaitJump => {}
        }
    }

    /// The player chose `response` (before the walk follows it).
    pub fn chose(&mut self, response: VertexId) {
        self.push(TallyEvent::Choice {
            line: self.line.map(|(line, _)| line),
            response,
        });
    }

    /// The server jumped to `target` at `now` (a quest check's result).
    pub fn jumped(&mut self, graph: &DialogueGraph, walk: &Walk, target: VertexId, now: Duration) {
        self.leave_line(now);
        self.on_jumped_branch = true;
        self.show(graph, walk, target, now);
    }

    /// The authored action `index` was committed.
    pub fn ran(&mut self, graph: &DialogueGraph, index: ActionIndex) {
        if accepted_quest(graph, index).is_some() {
            self.push(TallyEvent::Accept(index));
        }
    }

    /// The conversation ends at `now`: `how` unless the walk had reached its end, which makes it
    /// completed (or jumped) whatever closed it. Returns every distinct event with its count,
    /// in the order each first came, the ending (at the last line shown) among them.
    pub fn end(mut self, how: Ending, now: Duration) -> Vec<(TallyEvent, i64)> {
        let at = self.last_line;
        self.leave_line(now);
        let how = match (self.reached_end, how) {
            // Walking away or dropping after the last line still saw it all.
            (Some(false), _) => Ending::Completed,
            (Some(true), _) => Ending::Jumped,
            (None, how) => how,
        };
        self.push(TallyEvent::End { how, at });
        self.counts
    }

    /// Counts `event`: a lookup with a hash of a few integers, no allocation once it was seen.
    fn push(&mut self, event: TallyEvent) {
        match self.index.get(&event) {
            Some(&i) => self.counts[i].1 += 1,
            None => {
                self.index.insert(event, self.counts.len());
                self.counts.push((event, 1));
            }
        }
    }

    fn show(&mut self, graph: &DialogueGraph, walk: &Walk, line: VertexId, now: Duration) {
        self.push(TallyEvent::Visit(line));
        self.line = Some((line, now));
        self.last_line = Some(line);
        let on_line = graph.actions(line).map(|(index, _)| index);
        let on_responses = walk
            .shown_responses(graph, line)
            .flat_map(|response| graph.actions(response).map(|(index, _)| index));
        for index in on_line.chain(on_responses) {
            if accepted_quest(graph, index).is_some() {
                self.push(TallyEvent::Offer(index));
            }
        }
    }

    fn leave_line(&mut self, now: Duration) {
        if let Some((line, since)) = self.line.take() {
            let ms = u64::try_from(now.saturating_sub(since).as_millis()).unwrap_or(u64::MAX);
            self.push(TallyEvent::LineTime {
                line,
                bucket: super::buckets::of(ms),
            });
        }
    }
}

/// A multiply-and-rotate hash for tally events: they are small indexes into the conversation's
/// own graph, never text a client chose, so there are no collisions for anyone to aim at and
/// SipHash's cost (most of a step's tally) buys nothing.
#[derive(Clone, Copy, Debug, Default)]
struct EventHasher(u64);

impl EventHasher {
    fn add(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for EventHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The quest an `AcceptQuest` at `index` accepts.
pub fn accepted_quest(graph: &DialogueGraph, index: ActionIndex) -> Option<&str> {
    match graph.action(index).map(|a| &a.action) {
        Some(Action::AcceptQuest { quest_id }) => Some(quest_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_that_loops_for_long_holds_its_distinct_events_not_every_step() {
        let (a, b, r) = (VertexId(0), VertexId(1), VertexId(2));
        let mut tally = ConversationTally::default();
        tally.push(TallyEvent::Open(a));
        for _ in 0..10_000 {
            tally.push(TallyEvent::Visit(a));
            tally.chose(r);
            tally.push(TallyEvent::LineTime { line: a, bucket: 4 });
            tally.push(TallyEvent::Visit(b));
        }
        assert_eq!(tally.counts.len(), 5, "{:?}", tally.counts);
        let counts = tally.end(Ending::Closed, Duration::ZERO);
        assert_eq!(
            counts,
            [
                (TallyEvent::Open(a), 1),
                (TallyEvent::Visit(a), 10_000),
                (
                    TallyEvent::Choice {
                        line: None,
                        response: r
                    },
                    10_000
                ),
                (TallyEvent::LineTime { line: a, bucket: 4 }, 10_000),
                (TallyEvent::Visit(b), 10_000),
                (
                    TallyEvent::End {
                        how: Ending::Closed,
                        at: None
                    },
                    1
                ),
            ]
        );
    }

    #[test]
    fn events_that_differ_in_any_field_are_counted_apart() {
        let mut tally = ConversationTally::default();
        let events = [
            TallyEvent::Visit(VertexId(1)),
            TallyEvent::Visit(VertexId(2)),
            TallyEvent::Open(VertexId(1)),
            TallyEvent::LineTime {
                line: VertexId(1),
                bucket: 1,
            },
            TallyEvent::LineTime {
                line: VertexId(1),
                bucket: 2,
            },
            TallyEvent::Choice {
                line: None,
                response: VertexId(1),
            },
            TallyEvent::Choice {
                line: Some(VertexId(1)),
                response: VertexId(1),
            },
            TallyEvent::Offer(ActionIndex(1)),
            TallyEvent::Accept(ActionIndex(1)),
        ];
        for event in events {
            tally.push(event);
            tally.push(event);
        }
        let counts = tally.end(Ending::WalkedAway, Duration::ZERO);
        assert_eq!(counts.len(), events.len() + 1);
        assert!(
            counts[..events.len()]
                .iter()
                .zip(events)
                .all(|(c, e)| *c == (e, 2))
        );
    }
}
