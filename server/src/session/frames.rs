//! The frame layer: what arrives must be a small text frame, within the rate, that decodes as a
//! client message. No socket and no clock: a frame and the time go in, a verdict comes out.

use std::time::Duration;

use axum::extract::ws::Message;
use banter_protocol::ClientMessage;

use super::refusal::FrameError;

/// What to do with one frame from the client.
#[derive(Debug)]
pub enum Checked {
    /// A client message for the command layer.
    Message(ClientMessage),
    /// A control frame (ping, pong): nothing to answer.
    Ignore,
    /// The client closed the connection (a Close frame: it chose to leave).
    Closed,
    /// Refused before it became a message; `id` when a malformed frame still named one.
    Refused {
        id: Option<u64>,
        /// What the audit log calls it: `frame` before decoding, `invalid` when it did not decode.
        kind: &'static str,
        error: FrameError,
    },
    /// The client kept sending past the rate: the session ends.
    Flooding,
}

/// The per-connection message rate: a token bucket owned by the session's one task.
#[derive(Clone, Debug)]
pub struct RateLimit {
    tokens: f64,
    last: Duration,
    rate: f64,
    burst: f64,
}

impl RateLimit {
    /// A full bucket at `now`.
    pub fn new(rate: f64, burst: f64, now: Duration) -> RateLimit {
        RateLimit {
            tokens: burst,
            last: now,
            rate,
            burst,
        }
    }

    /// Takes one token if there is one at `now`.
    pub fn allow(&mut self, now: Duration) -> bool {
        let elapsed = now.saturating_sub(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Size, binary, rate and decoding checks, with the count of over-the-rate frames in a row.
#[derive(Clone, Debug)]
pub struct FrameCheck {
    rate: RateLimit,
    strikes: u32,
    flood_strikes: u32,
    max_frame_bytes: usize,
}

impl FrameCheck {
    pub fn new(limits: &crate::config::Limits, now: Duration) -> FrameCheck {
        FrameCheck {
            rate: RateLimit::new(limits.rate_per_sec, limits.burst, now),
            strikes: 0,
            flood_strikes: limits.flood_strikes,
            max_frame_bytes: limits.max_frame_bytes,
        }
    }

    /// Checks one frame received at `now`.
    pub fn check(&mut self, frame: Message, now: Duration) -> Checked {
        let text = match frame {
            Message::Close(_) => return Checked::Closed,
            Message::Ping(_) | Message::Pong(_) => return Checked::Ignore,
            Message::Text(text) => Some(text),
            Message::Binary(_) => None,
        };
        // Every data frame counts against the rate, binary ones included.
        if let Some(over) = self.over_rate(now) {
            return over;
        }
        let Some(text) = text else {
            return refused(None, "frame", FrameError::BinaryFrame);
        };
        self.decode(text.as_str())
    }

    /// Checks one text message received at `now` (a game-server channel's item: the same rate,
    /// size and decoding as a text frame, without copying it into one).
    pub fn check_text(&mut self, text: &str, now: Duration) -> Checked {
        if let Some(over) = self.over_rate(now) {
            return over;
        }
        self.decode(text)
    }

    /// Takes one token at `now`; the verdict when there was none (refused, or flooding after
    /// enough refusals in a row).
    fn over_rate(&mut self, now: Duration) -> Option<Checked> {
        if self.rate.allow(now) {
            self.strikes = 0;
            return None;
        }
        self.strikes += 1;
        if self.strikes >= self.flood_strikes {
            return Some(Checked::Flooding);
        }
        Some(refused(None, "frame", FrameError::RateLimited))
    }

    /// Size and decoding, after the rate.
    fn decode(&self, text: &str) -> Checked {
        if text.len() > self.max_frame_bytes {
            return refused(None, "frame", FrameError::TooLarge(self.max_frame_bytes));
        }
        match ClientMessage::decode(text) {
            Ok(message) => Checked::Message(message),
            // A frame that is JSON with a numeric `id` but no valid message still gets its
            // error under that id, so a client waiting on it does not hang.
            Err(e) => refused(e.id, "invalid", FrameError::Malformed(e.message)),
        }
    }
}

fn refused(id: Option<u64>, kind: &'static str, error: FrameError) -> Checked {
    Checked::Refused { id, kind, error }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;

    const MS: Duration = Duration::from_millis(1);

    fn text(s: &str) -> Message {
        Message::Text(s.to_owned().into())
    }

    fn code(checked: &Checked) -> Option<&FrameError> {
        match checked {
            Checked::Refused { error, .. } => Some(error),
            _ => None,
        }
    }

    #[test]
    fn a_valid_text_frame_is_a_message_and_control_frames_are_ignored() {
        let mut check = FrameCheck::new(&Limits::default(), Duration::ZERO);
        let checked = check.check(text(r#"{"type":"set_afk","id":3,"afk":true}"#), MS);
        assert!(matches!(checked, Checked::Message(m) if m.id() == Some(3)));
        assert!(matches!(
            check.check(Message::Ping(Default::default()), MS),
            Checked::Ignore
        ));
        assert!(matches!(
            check.check(Message::Close(None), MS),
            Checked::Closed
        ));
    }

    #[test]
    fn binary_oversized_and_malformed_frames_are_refused_with_their_codes() {
        let limits = Limits::default();
        let mut check = FrameCheck::new(&limits, Duration::ZERO);
        let binary = check.check(Message::Binary(vec![1, 2].into()), MS);
        assert_eq!(code(&binary), Some(&FrameError::BinaryFrame));
        let big = "x".repeat(limits.max_frame_bytes + 1);
        let big = check.check(text(&big), MS);
        assert_eq!(
            code(&big),
            Some(&FrameError::TooLarge(limits.max_frame_bytes))
        );
        let bad = check.check(text(r#"{"type":"nope","id":7}"#), MS);
        assert!(matches!(
            bad,
            Checked::Refused {
                id: Some(7),
                kind: "invalid",
                error: FrameError::Malformed(_)
            }
        ));
        let not_json = check.check(text("{"), MS);
        assert!(matches!(not_json, Checked::Refused { id: None, .. }));
    }

    #[test]
    fn past_the_burst_frames_are_rate_limited_and_twenty_in_a_row_are_flooding() {
        let limits = Limits::default();
        let mut check = FrameCheck::new(&limits, Duration::ZERO);
        let frame = || text(r#"{"type":"set_afk","afk":false}"#);
        for _ in 0..limits.burst as usize {
            assert!(matches!(check.check(frame(), MS), Checked::Message(_)));
        }
        for _ in 1..limits.flood_strikes {
            assert_eq!(
                code(&check.check(frame(), MS)),
                Some(&FrameError::RateLimited)
            );
        }
        assert!(matches!(check.check(frame(), MS), Checked::Flooding));
    }

    #[test]
    fn a_frame_within_the_rate_resets_the_strikes() {
        let limits = Limits::default();
        let mut check = FrameCheck::new(&limits, Duration::ZERO);
        let frame = || text(r#"{"type":"set_afk","afk":false}"#);
        for _ in 0..limits.burst as usize {
            check.check(frame(), Duration::ZERO);
        }
        for _ in 1..limits.flood_strikes {
            check.check(frame(), Duration::ZERO);
        }
        // One token refills after 1/rate seconds: that frame passes and clears the strikes.
        let later = Duration::from_secs_f64(1.0 / limits.rate_per_sec);
        assert!(matches!(check.check(frame(), later), Checked::Message(_)));
        assert_eq!(
            code(&check.check(frame(), later)),
            Some(&FrameError::RateLimited)
        );
    }

    #[test]
    fn the_bucket_refills_at_the_rate_up_to_the_burst() {
        let mut rate = RateLimit::new(20.0, 40.0, Duration::ZERO);
        for _ in 0..40 {
            assert!(rate.allow(Duration::ZERO));
        }
        assert!(!rate.allow(Duration::ZERO));
        assert!(rate.allow(Duration::from_millis(50)), "one token in 50 ms");
        assert!(!rate.allow(Duration::from_millis(50)));
        let much_later = Duration::from_secs(3600);
        for _ in 0..40 {
            assert!(rate.allow(much_later));
        }
        assert!(!rate.allow(much_later), "never more than the burst");
    }
}
