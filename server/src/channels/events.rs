//! A channel's outgoing events: numbered from 1 without gaps, kept until the game server
//! acknowledges them, bounded in count and bytes, and cut into answers. No I/O and no clock.

use std::collections::VecDeque;

use banter_protocol::ServerMessage;

/// The most unacknowledged events a channel keeps before it ends as too slow.
pub const MAX_QUEUED_EVENTS: usize = 8192;
/// The most bytes of unacknowledged events a channel keeps before it ends as too slow.
pub const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// One event, already written as the JSON object it goes out as.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Queued {
    n: u64,
    json: String,
}

/// The game server stopped reading: its unacknowledged events passed the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the channel's unacknowledged events passed {MAX_QUEUED_EVENTS} or {MAX_QUEUED_BYTES} bytes"
)]
pub struct Overflow;

/// Why an acknowledgement was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`ack` {ack} is past the last event sent ({last})")]
pub struct AckAhead {
    pub ack: u64,
    pub last: u64,
}

/// What an answer carries: the events as a JSON array's contents, and whether more wait.
#[derive(Debug, PartialEq, Eq)]
pub struct Cut {
    /// `{"n":..,"player":..,"message":..}` objects joined by commas.
    pub events: String,
    pub count: usize,
    pub more: bool,
}

#[derive(Debug, Default)]
pub struct EventQueue {
    queued: VecDeque<Queued>,
    bytes: usize,
    /// The last number given out (0: none yet).
    last: u64,
}

impl EventQueue {
    /// Queues `message` for `player`, numbered next.
    pub fn push(&mut self, player: &str, message: &ServerMessage) -> Result<u64, Overflow> {
        self.last += 1;
        let n = self.last;
        // Written straight, in the documented order: no intermediate JSON value.
        let json = format!(
            r#"{{"n":{n},"player":{},"message":{}}}"#,
            serde_json::to_string(player).unwrap_or_default(),
            message.to_json()
        );
        self.bytes += json.len();
        self.queued.push_back(Queued { n, json });
        if self.queued.len() > MAX_QUEUED_EVENTS || self.bytes > MAX_QUEUED_BYTES {
            return Err(Overflow);
        }
        Ok(n)
    }

    /// The last number given out.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Forgets every event up to `ack`. An `ack` at or behind what was forgotten already changes
    /// nothing; one past the last event sent is refused.
    pub fn ack(&mut self, ack: u64) -> Result<(), AckAhead> {
        if ack > self.last {
            return Err(AckAhead {
                ack,
                last: self.last,
            });
        }
        while self.queued.front().is_some_and(|e| e.n <= ack) {
            if let Some(gone) = self.queued.pop_front() {
                self.bytes -= gone.json.len();
            }
        }
        Ok(())
    }

    /// True when an event after `ack` waits.
    pub fn waiting_after(&self, ack: u64) -> bool {
        self.queued.back().is_some_and(|e| e.n > ack)
    }

    /// The events after `ack`, at most `max_events` and `max_bytes` (the first always goes).
    pub fn cut_after(&self, ack: u64, max_events: usize, max_bytes: usize) -> Cut {
        let mut events = String::new();
        let mut count = 0;
        let mut more = false;
        for event in self.queued.iter().filter(|e| e.n > ack) {
            let fits = count < max_events && events.len() + event.json.len() < max_bytes;
            if !fits && count > 0 {
                more = true;
                break;
            }
            if count > 0 {
                events.push(',');
            }
            events.push_str(&event.json);
            count += 1;
        }
        Cut {
            events,
            count,
            more,
        }
    }

    /// Takes every queued event (a WebSocket sends them at once and needs no acknowledgement).
    pub fn drain(&mut self) -> Cut {
        let cut = self.cut_after(0, usize::MAX, usize::MAX);
        self.queued.clear();
        self.bytes = 0;
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(id: u64) -> ServerMessage {
        ServerMessage::Ack { id }
    }

    #[test]
    fn events_are_numbered_kept_until_acknowledged_and_cut_into_answers() {
        let mut queue = EventQueue::default();
        for id in 1..=5 {
            assert_eq!(queue.push("rbx-1", &ack(id)), Ok(id));
        }
        let all = queue.cut_after(0, 100, usize::MAX);
        assert_eq!(all.count, 5);
        assert!(!all.more);
        assert!(
            all.events
                .starts_with(r#"{"n":1,"player":"rbx-1","message":{"type":"ack","id":1}},{"n":2"#),
            "{}",
            all.events
        );
        let two = queue.cut_after(0, 2, usize::MAX);
        assert_eq!((two.count, two.more), (2, true));
        assert_eq!(queue.ack(3), Ok(()));
        let rest = queue.cut_after(3, 100, usize::MAX);
        assert_eq!(rest.count, 2);
        assert!(queue.waiting_after(4));
        assert!(!queue.waiting_after(5));
        assert_eq!(queue.ack(1), Ok(()), "an older ack changes nothing");
        assert_eq!(queue.cut_after(3, 100, usize::MAX).count, 2);
        assert_eq!(queue.ack(6), Err(AckAhead { ack: 6, last: 5 }));
        let tiny = queue.cut_after(0, 100, 1);
        assert_eq!(
            (tiny.count, tiny.more),
            (1, true),
            "the first event always goes"
        );
        assert_eq!(queue.drain().count, 2);
        assert!(!queue.waiting_after(0));
        assert_eq!(queue.push("rbx-1", &ack(9)), Ok(6), "numbers never restart");
    }

    #[test]
    fn a_game_server_that_stops_reading_overflows() {
        let mut queue = EventQueue::default();
        for id in 0..MAX_QUEUED_EVENTS as u64 {
            assert!(queue.push("rbx-1", &ack(id)).is_ok());
        }
        assert_eq!(queue.push("rbx-1", &ack(0)), Err(Overflow));
    }
}
