//! Time as a person spends it: reading a line at typewriter pace, and the client's own rate
//! limit so an honest client never meets the server's.
//!
//! [`visible_len`] is how long a line is on screen: what the typewriter of article section 6.2
//! reveals, counted by the shared `banter_dialogue::text::visible_graphemes`.

use std::time::Duration;

use tokio::time::Instant;

/// How many graphemes the typewriter reveals for `text` (article section 6.2: rich-text tags
/// are not drawn, an entity is one character, a grapheme cluster is one).
pub fn visible_len(text: &str) -> usize {
    banter_dialogue::text::visible_graphemes(text)
}

/// How a simulated reader spends time on a conversation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadingPace {
    /// Time per revealed grapheme (the typewriter's interval without a voice clip).
    pub per_grapheme: Duration,
    /// Time spent on a line once it has appeared, before advancing or choosing.
    pub after_line: Duration,
    /// Time a cutscene plays.
    pub cutscene: Duration,
}

impl ReadingPace {
    /// The default typewriter: 30 ms a grapheme, 400 ms to take the line in, 2 s cutscenes.
    pub const TYPEWRITER: ReadingPace = ReadingPace {
        per_grapheme: Duration::from_millis(30),
        after_line: Duration::from_millis(400),
        cutscene: Duration::from_secs(2),
    };

    /// No reading time at all (load tests that measure the server, not people).
    pub const INSTANT: ReadingPace = ReadingPace {
        per_grapheme: Duration::ZERO,
        after_line: Duration::ZERO,
        cutscene: Duration::ZERO,
    };

    /// How long `text` keeps a reader busy.
    pub fn reading_time(&self, text: &str) -> Duration {
        let graphemes = u32::try_from(visible_len(text)).unwrap_or(u32::MAX);
        self.per_grapheme.saturating_mul(graphemes) + self.after_line
    }
}

/// The client's own rate limit: at most one message every `interval`.
#[derive(Clone, Debug)]
pub struct Pacer {
    interval: Duration,
    next: Option<Instant>,
}

impl Pacer {
    /// At most `per_sec` messages a second (0 or less: no limit).
    pub fn new(per_sec: f64) -> Pacer {
        let interval = if per_sec > 0.0 && per_sec.is_finite() {
            Duration::from_secs_f64(1.0 / per_sec)
        } else {
            Duration::ZERO
        };
        Pacer {
            interval,
            next: None,
        }
    }

    /// Waits until the next message may go out, and books its slot.
    pub async fn ready(&mut self) {
        let now = Instant::now();
        if let Some(next) = self.next
            && next > now
        {
            tokio::time::sleep_until(next).await;
        }
        self.next = Some(Instant::now() + self.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_not_drawn_and_entities_are_one() {
        assert_eq!(visible_len("hello"), 5);
        assert_eq!(visible_len(r##"<font color="#fff">hi</font>"##), 2);
        assert_eq!(visible_len("fish &amp; chips"), 12);
        assert_eq!(visible_len("e\u{0301}"), 1);
    }

    #[test]
    fn reading_time_grows_with_the_line() {
        let pace = ReadingPace::TYPEWRITER;
        assert_eq!(
            pace.reading_time("abcd"),
            Duration::from_millis(4 * 30 + 400)
        );
        assert_eq!(ReadingPace::INSTANT.reading_time("abcd"), Duration::ZERO);
    }
}
