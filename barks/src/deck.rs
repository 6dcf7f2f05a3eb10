//! A deck, not a die (section 4.4).
//!
//! "Picking independently at random among n lines sounds broken very
//! quickly": with a die, the fourth line you hear from a pool of 6 is already
//! a repeat on average. So lines are dealt from a shuffled deck (Fisher and
//! Yates, in Durstenfeld's in-place version) that is only reshuffled once it
//! runs out, with a swap at the seam so the last card of one deck cannot be
//! the first of the next.
//!
//! Beyond the article, the deck separates *looking* at the next card from
//! *spending* it: [`Deck::peek`] finds the card that would be dealt without
//! changing the deck, and [`Deck::commit`] spends it. The director commits only
//! once every later filter has passed and the line actually plays, so the
//! guarantee holds for what is heard, not only for what is dealt (the
//! article's section 5 limitation). A card that is not eligible right now is
//! not thrown away either: it keeps its place and is dealt as soon as it is
//! eligible within the same pass.

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::rng::below;

/// Where a peeked card comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pass {
    /// What is left of the current deck.
    Rest,
    /// A freshly shuffled deck; the current one had nothing eligible left.
    Fresh,
}

/// The card [`Deck::peek`] would deal, and how to spend it with
/// [`Deck::commit`]. Valid until the deck is next peeked or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek<T> {
    /// The card.
    pub card: T,
    /// Which of the (at most two) passes it was found in.
    pub pass: Pass,
    index: usize,
}

/// A shuffled deck of cards (line ids) for one cue's pool.
///
/// Guarantees, for a pool of `n > 1` cards whose cards are all eligible when
/// looked at: no card is dealt twice before every card has been dealt, and no
/// card is dealt twice in a row, across reshuffles too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deck<T> {
    /// The current permutation of the whole pool. `order[..pos]` has been
    /// dealt in this pass; `order[pos..]` is what is left, in deal order.
    order: Vec<T>,
    pos: usize,
    /// The last card dealt, which the next deck must not start with.
    last: Option<T>,
    /// A fresh shuffle prepared by `peek` and taken over by `commit`.
    fresh: Vec<T>,
    shuffles: u64,
}

impl<T: Copy + Ord> Deck<T> {
    /// A deck of `cards`, put in sorted order first "so it's deterministic,
    /// and the shuffle randomizes it". The deck starts out spent: the first
    /// draw shuffles it.
    pub fn new(mut cards: Vec<T>) -> Self {
        cards.sort_unstable();
        cards.dedup();
        let pos = cards.len();
        Deck {
            order: cards,
            pos,
            last: None,
            fresh: Vec::new(),
            shuffles: 0,
        }
    }

    /// Number of cards in the pool.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the pool has no cards at all.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The cards not yet dealt in this pass, in deal order.
    pub fn remaining(&self) -> &[T] {
        &self.order[self.pos..]
    }

    /// The cards dealt in this pass, in the order they were dealt.
    pub fn dealt(&self) -> &[T] {
        &self.order[..self.pos]
    }

    /// The last card dealt.
    pub fn last(&self) -> Option<T> {
        self.last
    }

    /// How many times the deck has been shuffled.
    pub fn shuffles(&self) -> u64 {
        self.shuffles
    }

    /// The card `draw` would deal, without spending it.
    ///
    /// Walks at most two passes: "what is left of the deck and a freshly
    /// shuffled one, so a line skipped in both isn't badly positioned, it's
    /// just not eligible right now." In the fresh pass the card dealt last
    /// is skipped as well (when the pool has more than one card): the seam
    /// swap guarantees that only for the first card, and a skipped
    /// ineligible first card would otherwise let the last one through.
    pub fn peek<R, F>(&mut self, rng: &mut R, mut eligible: F) -> Option<Peek<T>>
    where
        R: Rng + ?Sized,
        F: FnMut(T) -> bool,
    {
        if let Some(i) = (self.pos..self.order.len()).find(|&i| eligible(self.order[i])) {
            return Some(Peek {
                card: self.order[i],
                pass: Pass::Rest,
                index: i,
            });
        }
        if self.order.is_empty() {
            return None;
        }
        self.shuffle_fresh(rng);
        let avoid = if self.order.len() > 1 {
            self.last
        } else {
            None
        };
        let i = (0..self.fresh.len())
            .find(|&i| Some(self.fresh[i]) != avoid && eligible(self.fresh[i]))?;
        Some(Peek {
            card: self.fresh[i],
            pass: Pass::Fresh,
            index: i,
        })
    }

    /// Spend a peeked card: it is dealt, and will not be dealt again in this
    /// pass. Cards skipped on the way keep their places.
    ///
    /// `peek` must be the result of the latest [`Deck::peek`] on this deck,
    /// with nothing committed in between; anything else is ignored.
    pub fn commit(&mut self, peek: Peek<T>) {
        if peek.pass == Pass::Fresh {
            if self.fresh.len() != self.order.len()
                || self.fresh.get(peek.index) != Some(&peek.card)
            {
                return;
            }
            core::mem::swap(&mut self.order, &mut self.fresh);
            self.pos = 0;
            self.shuffles += 1;
        } else if peek.index < self.pos || self.order.get(peek.index) != Some(&peek.card) {
            return;
        }
        self.order[self.pos..=peek.index].rotate_right(1);
        self.pos += 1;
        self.last = Some(peek.card);
    }

    /// Deal the next card, every card being eligible: peek and commit.
    pub fn deal<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<T> {
        let p = self.peek(rng, |_| true)?;
        self.commit(p);
        Some(p.card)
    }

    /// Fisher–Yates in Durstenfeld's version into `self.fresh`, then the seam
    /// swap: "if the first card matches the last one dealt, it is swapped
    /// with the last card of the new deck."
    fn shuffle_fresh<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.fresh.clear();
        self.fresh.extend_from_slice(&self.order);
        let n = self.fresh.len();
        for i in (1..n).rev() {
            // `i + 1 <= n`, and pools are far smaller than u32::MAX.
            let j = below(rng, u32::try_from(i + 1).unwrap_or(u32::MAX)) as usize;
            self.fresh.swap(i, j);
        }
        if n > 1 && Some(self.fresh[0]) == self.last {
            self.fresh.swap(0, n - 1);
        }
    }

    /// The deck's state, for a snapshot.
    pub fn state(&self) -> DeckState<T> {
        DeckState {
            order: self.order.clone(),
            pos: self.pos,
            last: self.last,
            shuffles: self.shuffles,
        }
    }

    /// Rebuild a deck from a snapshot, if the snapshot holds exactly the
    /// cards of `pool` (in any order); otherwise `None`.
    pub fn from_state(pool: &[T], state: DeckState<T>) -> Option<Self> {
        let mut a = pool.to_vec();
        a.sort_unstable();
        a.dedup();
        let mut b = state.order.clone();
        b.sort_unstable();
        if a != b || state.pos > state.order.len() {
            return None;
        }
        if let Some(l) = state.last
            && a.binary_search(&l).is_err()
        {
            return None;
        }
        Some(Deck {
            order: state.order,
            pos: state.pos,
            last: state.last,
            fresh: Vec::new(),
            shuffles: state.shuffles,
        })
    }
}

/// A deck's state in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeckState<T> {
    /// The current permutation.
    pub order: Vec<T>,
    /// How many cards of `order` have been dealt in this pass.
    pub pos: usize,
    /// The last card dealt.
    pub last: Option<T>,
    /// Shuffles so far.
    pub shuffles: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn first_pass_is_a_permutation_of_sorted_cards() {
        let mut d = Deck::new(vec![5u16, 1, 3, 2, 4]);
        assert_eq!(d.remaining(), &[] as &[u16]);
        let mut r = SplitMix64::new(1);
        let mut got: Vec<u16> = (0..5).filter_map(|_| d.deal(&mut r)).collect();
        assert_eq!(d.shuffles(), 1);
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3, 4, 5]);
        assert!(d.remaining().is_empty());
    }

    #[test]
    fn peek_does_not_spend() {
        let mut d = Deck::new((0u16..6).collect());
        let mut r = SplitMix64::new(2);
        let first = d.deal(&mut r);
        let before = d.clone();
        let p = d.peek(&mut r, |_| true);
        assert!(p.is_some());
        assert_eq!(d.state(), before.state());
        assert_ne!(p.map(|p| p.card), first);
    }

    #[test]
    fn ineligible_cards_keep_their_place() {
        let mut d = Deck::new((0u16..4).collect());
        let mut r = SplitMix64::new(3);
        d.deal(&mut r);
        let rest = d.remaining().to_vec();
        let blocked = rest[0];
        let p = d.peek(&mut r, |c| c != blocked).expect("eligible card");
        assert_eq!(p.card, rest[1]);
        d.commit(p);
        assert_eq!(d.remaining()[0], blocked);
        assert_eq!(d.remaining().len(), 2);
    }

    #[test]
    fn fresh_pass_never_starts_with_last_even_if_first_is_ineligible() {
        for seed in 0..500 {
            let mut d = Deck::new(vec![0u16, 1, 2]);
            let mut r = SplitMix64::new(seed);
            for _ in 0..3 {
                d.deal(&mut r);
            }
            let last = d.last().expect("dealt");
            // Only `last` and one other card are eligible; the other is
            // blocked, so a naive walk could hand `last` straight back.
            let other = (0..3).find(|&c| c != last).expect("other");
            let p = d.peek(&mut r, |c| c != other);
            assert!(p.is_none_or(|p| p.card != last), "seed {seed}");
        }
    }

    #[test]
    fn snapshot_roundtrip_and_mismatch() {
        let mut d = Deck::new((0u16..5).collect());
        let mut r = SplitMix64::new(4);
        d.deal(&mut r);
        d.deal(&mut r);
        let s = d.state();
        let pool: Vec<u16> = (0..5).collect();
        let back = Deck::from_state(&pool, s.clone()).expect("same pool");
        assert_eq!(back.state(), s);
        assert!(Deck::from_state(&pool[..4], s).is_none());
    }
}
