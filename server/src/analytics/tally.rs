//! What one conversation did, as it happens: the lines it showed, the responses chosen, how long
//! each line stayed on screen, the quests it offered and accepted, and how it ended.
//!
//! Pure: no clock (the session passes its server time) and no names. Events are vertex and
//! action indexes into the conversation's own graph, so a step costs a push onto a vector; the
//! names are looked up once, when the conversation ends and its tally joins the rollup
//! ([`super::Analytics::conversation_ended`]).

use std::collections::HashMap;
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
    events: Vec<TallyEvent>,
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
        tally.events.push(TallyEvent::Open(entry));
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
        self.events.push(TallyEvent::Choice {
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
            self.events.push(TallyEvent::Accept(index));
        }
    }

    /// The conversation ends at `now`: `how` unless the walk had reached its end, which makes it
    /// completed (or jumped) whatever closed it. Returns every event, the ending last, at the
    /// last line shown.
    pub fn end(mut self, how: Ending, now: Duration) -> Vec<TallyEvent> {
        let at = self.last_line;
        self.leave_line(now);
        let how = match (self.reached_end, how) {
            // Walking away or dropping after the last line still saw it all.
            (Some(false), _) => Ending::Completed,
            (Some(true), _) => Ending::Jumped,
            (None, how) => how,
        };
        self.events.push(TallyEvent::End { how, at });
        self.events
    }

    /// Events so far (for tests).
    pub fn events(&self) -> &[TallyEvent] {
        &self.events
    }

    fn show(&mut self, graph: &DialogueGraph, walk: &Walk, line: VertexId, now: Duration) {
        self.events.push(TallyEvent::Visit(line));
        self.line = Some((line, now));
        self.last_line = Some(line);
        let on_line = graph.actions(line).map(|(index, _)| index);
        let on_responses = walk
            .shown_responses(graph, line)
            .flat_map(|response| graph.actions(response).map(|(index, _)| index));
        for index in on_line.chain(on_responses) {
            if accepted_quest(graph, index).is_some() {
                self.events.push(TallyEvent::Offer(index));
            }
        }
    }

    fn leave_line(&mut self, now: Duration) {
        if let Some((line, since)) = self.line.take() {
            let ms = u64::try_from(now.saturating_sub(since).as_millis()).unwrap_or(u64::MAX);
            self.events.push(TallyEvent::LineTime {
                line,
                bucket: super::buckets::of(ms),
            });
        }
    }
}

/// Each distinct event of `events` with how many times it came, in the order each first came:
/// a conversation that loops repeats the same few events thousands of times.
pub fn count_distinct(events: &[TallyEvent]) -> Vec<(TallyEvent, i64)> {
    let mut distinct: Vec<(TallyEvent, i64)> = Vec::new();
    let mut seen: HashMap<TallyEvent, usize> = HashMap::new();
    for event in events {
        match seen.get(event) {
            Some(&i) => distinct[i].1 += 1,
            None => {
                seen.insert(*event, distinct.len());
                distinct.push((*event, 1));
            }
        }
    }
    distinct
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
    fn repeated_events_are_counted_once_each_in_the_order_they_first_came() {
        let (a, b, r) = (VertexId(1), VertexId(2), VertexId(3));
        let lap = [
            TallyEvent::Visit(a),
            TallyEvent::Choice {
                line: Some(a),
                response: r,
            },
            TallyEvent::LineTime { line: a, bucket: 4 },
            TallyEvent::Visit(b),
        ];
        let mut events = vec![TallyEvent::Open(a)];
        for _ in 0..1000 {
            events.extend(lap);
        }
        events.push(TallyEvent::End {
            how: Ending::Closed,
            at: Some(b),
        });
        let mut expected = vec![(TallyEvent::Open(a), 1)];
        expected.extend(lap.map(|e| (e, 1000)));
        expected.push((
            TallyEvent::End {
                how: Ending::Closed,
                at: Some(b),
            },
            1,
        ));
        assert_eq!(count_distinct(&events), expected);
        assert_eq!(count_distinct(&[]), []);
    }
}
