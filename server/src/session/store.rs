//! The store as the session core sees it: only the calls the core makes itself. The quest
//! engine's steps (`quests::execute` and the cutscene and abandon steps) are the engine's, and
//! take the whole `Store`.

use futures_util::future::BoxFuture;

use crate::store::{PlayerRecord, Store, StoreError};

/// What `SessionCore` asks of the store directly: the player's record after an event, and the
/// parked conversation (park, take, discard). Implemented for every [`Store`].
pub trait SessionStore: Send + Sync {
    /// `"sqlite"` or `"postgres"`: a resume polls only a store several instances share.
    fn backend(&self) -> &'static str;

    /// See [`Store::load_player`].
    fn load_player<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<PlayerRecord, StoreError>>;

    /// See [`Store::park_conversation`].
    fn park_conversation<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        until_ms: i64,
        now_ms: i64,
        parked: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// See [`Store::take_parked`].
    fn take_parked<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// See [`Store::discard_parked`].
    fn discard_parked<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

impl<S: Store + ?Sized> SessionStore for S {
    fn backend(&self) -> &'static str {
        Store::backend(self)
    }

    fn load_player<'a>(
        &'a self,
        player: &'a str,
    ) -> BoxFuture<'a, Result<PlayerRecord, StoreError>> {
        Store::load_player(self, player)
    }

    fn park_conversation<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        until_ms: i64,
        now_ms: i64,
        parked: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Store::park_conversation(self, player, token, until_ms, now_ms, parked)
    }

    fn take_parked<'a>(
        &'a self,
        player: &'a str,
        token: &'a str,
        now_ms: i64,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Store::take_parked(self, player, token, now_ms)
    }

    fn discard_parked<'a>(&'a self, player: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Store::discard_parked(self, player)
    }
}
