//! [`Outbox`]: a session's outgoing queue, bounded in messages and in bytes.
//!
//! The session's own task owns it: answers wait here until the task next waits for a frame,
//! and then go into the socket together, with one flush (`session::socket::Connection`). No
//! second task, no channel and no wake-up of another thread per message.
//!
//! A count alone does not bound memory: 128 queued answers of 6 KiB each (a conversation
//! fetch) are 768 KiB held for a client that never reads, and a larger conversation makes it
//! more. The byte bound caps that; the session treats a full outbox as a client that stopped
//! reading. One message larger than the bound still goes out when nothing else is queued, so a
//! big answer to a reading client is never refused.

use std::collections::VecDeque;

use axum::extract::ws::Message;

/// The messages waiting for the socket.
#[derive(Debug)]
pub struct Outbox {
    queue: VecDeque<Message>,
    queued_bytes: usize,
    max_messages: usize,
    max_bytes: usize,
}

/// The message was not queued: the outbox is full.
#[derive(Debug, PartialEq, Eq)]
pub struct Full;

/// The bytes a message takes in the queue.
fn size(message: &Message) -> usize {
    match message {
        Message::Text(text) => text.len(),
        Message::Binary(bytes) | Message::Ping(bytes) | Message::Pong(bytes) => bytes.len(),
        Message::Close(frame) => frame.as_ref().map_or(0, |f| f.reason.len()),
    }
}

impl Outbox {
    /// An outbox holding at most `max_messages` messages and `max_bytes` bytes (both at least 1).
    pub fn new(max_messages: usize, max_bytes: usize) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            queued_bytes: 0,
            max_messages: max_messages.max(1),
            max_bytes: max_bytes.max(1),
        }
    }

    /// Whether `count` more messages of `bytes` in all fit: the byte bound is checked against
    /// what was queued before them, so one message (or one step's) over it goes to an empty
    /// queue.
    fn fits(&self, count: usize, bytes: usize) -> bool {
        self.queue.len().saturating_add(count) <= self.max_messages
            && (self.queued_bytes == 0 || self.queued_bytes.saturating_add(bytes) <= self.max_bytes)
    }

    /// Queues a message.
    pub fn try_send(&mut self, message: Message) -> Result<(), Full> {
        let size = size(&message);
        if !self.fits(1, size) {
            return Err(Full);
        }
        self.queued_bytes += size;
        self.queue.push_back(message);
        Ok(())
    }

    /// Queues one step's messages as a unit, or none of them: the byte bound is checked
    /// against what was queued before them, as for one message. So a step's big answer (an
    /// `opened` with a large conversation) and the `ack` after it go out together to a client
    /// that reads, instead of the `ack` finding the queue full behind its own answer.
    pub fn try_send_all(&mut self, messages: Vec<Message>) -> Result<(), Full> {
        let total: usize = messages.iter().map(size).sum();
        if !self.fits(messages.len(), total) {
            return Err(Full);
        }
        self.queued_bytes += total;
        self.queue.extend(messages);
        Ok(())
    }

    /// The oldest message waiting, taken out.
    pub fn pop(&mut self) -> Option<Message> {
        let message = self.queue.pop_front()?;
        self.queued_bytes -= size(&message);
        Some(message)
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(len: usize) -> Message {
        Message::Text("x".repeat(len).into())
    }

    #[test]
    fn a_steps_messages_are_queued_together_against_what_was_queued_before() {
        let mut outbox = Outbox::new(100, 1000);
        // An answer over the bound and its ack: both go out to an empty queue.
        assert_eq!(outbox.try_send_all(vec![text(1500), text(20)]), Ok(()));
        // Behind them, the next step waits for the socket.
        assert_eq!(outbox.try_send_all(vec![text(10)]), Err(Full));
        assert!(outbox.pop().is_some());
        assert!(outbox.pop().is_some());
        assert_eq!(outbox.try_send_all(vec![text(600), text(300)]), Ok(()));
        assert_eq!(outbox.try_send_all(vec![text(50), text(60)]), Err(Full));
        assert_eq!(
            outbox.try_send(text(100)),
            Ok(()),
            "a refused step left no bytes behind"
        );
        // Past the message bound: refused whole.
        let mut small = Outbox::new(2, 1000);
        assert_eq!(
            small.try_send_all(vec![text(1), text(1), text(1)]),
            Err(Full)
        );
        assert!(small.is_empty());
        assert_eq!(small.queued_bytes, 0);
    }

    #[test]
    fn bounded_in_bytes_and_freed_as_the_socket_takes() {
        let mut outbox = Outbox::new(100, 1000);
        assert_eq!(outbox.try_send(text(600)), Ok(()));
        assert_eq!(outbox.try_send(text(300)), Ok(()));
        assert_eq!(outbox.try_send(text(200)), Err(Full));
        assert!(outbox.pop().is_some());
        assert_eq!(outbox.try_send(text(200)), Ok(()));
        assert_eq!(outbox.queued_bytes, 500);
    }

    #[test]
    fn bounded_in_messages() {
        let mut outbox = Outbox::new(2, 1_000_000);
        assert_eq!(outbox.try_send(text(1)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Err(Full));
        // A refused message leaves no bytes counted.
        assert_eq!(outbox.queued_bytes, 2);
    }

    #[test]
    fn one_message_larger_than_the_bound_goes_when_nothing_else_is_queued() {
        let mut outbox = Outbox::new(10, 100);
        assert_eq!(outbox.try_send(text(5000)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Err(Full));
        assert!(outbox.pop().is_some());
        assert!(outbox.is_empty());
        assert_eq!(outbox.try_send(text(1)), Ok(()));
    }

    #[test]
    fn messages_leave_in_the_order_they_were_queued() {
        let mut outbox = Outbox::new(10, 1000);
        assert_eq!(outbox.try_send(text(1)), Ok(()));
        assert_eq!(outbox.try_send_all(vec![text(2), text(3)]), Ok(()));
        let sizes: Vec<usize> = std::iter::from_fn(|| outbox.pop())
            .map(|m| size(&m))
            .collect();
        assert_eq!(sizes, [1, 2, 3]);
    }
}
