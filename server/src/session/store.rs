//! The store as the session core sees it: only the calls the core makes itself. The quest
//! engine's steps (`quests::execute` and the cutscene and abandon steps) are the engine's, and
//! take the whole `Store`.
//!
//! [`SessionStore`] is declared beside [`Store`](crate::store::Store), as its supertrait (the
//! store names nothing above it), so that its calls are written once, and every store is one.

pub use crate::store::SessionStore;
