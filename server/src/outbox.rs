//! [`Outbox`]: a session's outgoing queue, bounded in messages and in bytes.
//!
//! A count alone does not bound memory: 128 queued answers of 6 KiB each (a conversation
//! fetch) are 768 KiB held for a client that never reads, and a larger conversation makes it
//! more. The byte bound caps that; the session treats a full outbox as a client that stopped
//! reading. One message larger than the bound still goes out when nothing else is queued, so a
//! big answer to a reading client is never refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::ws::Message;
use tokio::sync::mpsc;

/// The sending side; cloned by whoever answers the client.
#[derive(Clone, Debug)]
pub struct Outbox {
    sender: mpsc::Sender<Message>,
    queued_bytes: Arc<AtomicUsize>,
    max_bytes: usize,
}

/// The writer's side.
#[derive(Debug)]
pub struct OutboxReceiver {
    receiver: mpsc::Receiver<Message>,
    queued_bytes: Arc<AtomicUsize>,
}

/// The message was not queued: the outbox is full (or the writer is gone).
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
    pub fn new(max_messages: usize, max_bytes: usize) -> (Outbox, OutboxReceiver) {
        let (sender, receiver) = mpsc::channel(max_messages.max(1));
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let outbox = Outbox {
            sender,
            queued_bytes: queued_bytes.clone(),
            max_bytes: max_bytes.max(1),
        };
        (
            outbox,
            OutboxReceiver {
                receiver,
                queued_bytes,
            },
        )
    }

    /// Queues a message without waiting.
    pub fn try_send(&self, message: Message) -> Result<(), Full> {
        let size = size(&message);
        let before = self.queued_bytes.fetch_add(size, Ordering::AcqRel);
        if before > 0 && before.saturating_add(size) > self.max_bytes {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            return Err(Full);
        }
        if self.sender.try_send(message).is_err() {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            return Err(Full);
        }
        Ok(())
    }

    /// Queues one step's messages as a unit, without waiting: the byte bound is checked
    /// against what was queued before them, as for one message. So a step's big answer (an
    /// `opened` with a large conversation) and the `ack` after it go out together to a client
    /// that reads, instead of the `ack` finding the queue full behind its own answer.
    pub fn try_send_all(&self, messages: Vec<Message>) -> Result<(), Full> {
        let total: usize = messages.iter().map(size).sum();
        let before = self.queued_bytes.fetch_add(total, Ordering::AcqRel);
        if before > 0 && before.saturating_add(total) > self.max_bytes {
            self.queued_bytes.fetch_sub(total, Ordering::AcqRel);
            return Err(Full);
        }
        let mut unsent = total;
        for message in messages {
            let size = size(&message);
            if self.sender.try_send(message).is_err() {
                self.queued_bytes.fetch_sub(unsent, Ordering::AcqRel);
                return Err(Full);
            }
            unsent -= size;
        }
        Ok(())
    }
}

impl OutboxReceiver {
    /// The next message; `None` once every [`Outbox`] is dropped and the queue is drained.
    pub async fn recv(&mut self) -> Option<Message> {
        let message = self.receiver.recv().await?;
        self.taken(&message);
        Some(message)
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<Message> {
        let message = self.receiver.try_recv().ok()?;
        self.taken(&message);
        Some(message)
    }

    fn taken(&self, message: &Message) {
        self.queued_bytes.fetch_sub(size(message), Ordering::AcqRel);
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
        let (outbox, mut receiver) = Outbox::new(100, 1000);
        // An answer over the bound and its ack: both go out to an empty queue.
        assert_eq!(outbox.try_send_all(vec![text(1500), text(20)]), Ok(()));
        // Behind them, the next step waits for the writer.
        assert_eq!(outbox.try_send_all(vec![text(10)]), Err(Full));
        assert!(receiver.try_recv().is_some());
        assert!(receiver.try_recv().is_some());
        assert_eq!(outbox.try_send_all(vec![text(600), text(300)]), Ok(()));
        assert_eq!(outbox.try_send_all(vec![text(50), text(60)]), Err(Full));
        assert_eq!(
            outbox.try_send(text(100)),
            Ok(()),
            "a refused step left no bytes behind"
        );
        // Past the message bound: refused, and its bytes are given back.
        let (small, _receiver) = Outbox::new(2, 1000);
        assert_eq!(
            small.try_send_all(vec![text(1), text(1), text(1)]),
            Err(Full)
        );
        assert_eq!(small.queued_bytes.load(Ordering::Acquire), 2);
    }

    #[test]
    fn bounded_in_bytes_and_freed_as_the_writer_takes() {
        let (outbox, mut receiver) = Outbox::new(100, 1000);
        assert_eq!(outbox.try_send(text(600)), Ok(()));
        assert_eq!(outbox.try_send(text(300)), Ok(()));
        assert_eq!(outbox.try_send(text(200)), Err(Full));
        assert!(receiver.try_recv().is_some());
        assert_eq!(outbox.try_send(text(200)), Ok(()));
        assert_eq!(outbox.queued_bytes.load(Ordering::Acquire), 500);
    }

    #[test]
    fn bounded_in_messages() {
        let (outbox, _receiver) = Outbox::new(2, 1_000_000);
        assert_eq!(outbox.try_send(text(1)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Err(Full));
        // A refused message leaves no bytes counted.
        assert_eq!(outbox.queued_bytes.load(Ordering::Acquire), 2);
    }

    #[test]
    fn one_message_larger_than_the_bound_goes_when_nothing_else_is_queued() {
        let (outbox, mut receiver) = Outbox::new(10, 100);
        assert_eq!(outbox.try_send(text(5000)), Ok(()));
        assert_eq!(outbox.try_send(text(1)), Err(Full));
        assert!(receiver.try_recv().is_some());
        assert_eq!(outbox.try_send(text(1)), Ok(()));
    }

    #[tokio::test]
    async fn the_receiver_ends_when_every_outbox_is_gone() {
        let (outbox, mut receiver) = Outbox::new(4, 100);
        let clone = outbox.clone();
        assert_eq!(clone.try_send(text(3)), Ok(()));
        drop(outbox);
        drop(clone);
        assert!(receiver.recv().await.is_some());
        assert!(receiver.recv().await.is_none());
    }
}
