//! Parked conversations: taken once, with their token, within their window, on any store of the
//! database (so on any instance).

use crate::store_support::{OpenStore, TestDb};

async fn a_parked_conversation_is_taken_once_with_its_token_within_its_window(db: &TestDb) {
    let store = db.open().await;
    let other = db.open().await;
    store
        .park_conversation("p1", "t1", 10_000, 1_000, r#"{"walk":1}"#)
        .await
        .expect("parked");
    assert_eq!(store.take_parked("p1", "wrong", 2_000).await, Ok(None));
    assert_eq!(store.take_parked("p2", "t1", 2_000).await, Ok(None));
    assert_eq!(store.take_parked("p1", "", 2_000).await, Ok(None));
    assert_eq!(
        store.take_parked("p1", "t1", 10_000).await,
        Ok(None),
        "the window closed"
    );
    // A newer park replaces it; another store on the database (another instance) takes it.
    store
        .park_conversation("p1", "t2", 10_000, 1_000, r#"{"walk":2}"#)
        .await
        .expect("parked");
    assert_eq!(
        other.take_parked("p1", "t2", 2_000).await,
        Ok(Some(r#"{"walk":2}"#.to_owned()))
    );
    assert_eq!(store.take_parked("p1", "t2", 2_000).await, Ok(None), "once");
    store
        .park_conversation("p1", "t3", 10_000, 1_000, "{}")
        .await
        .expect("parked");
    store.discard_parked("p1").await.expect("discarded");
    assert_eq!(store.take_parked("p1", "t3", 2_000).await, Ok(None));
    // Parking sweeps every player's closed windows.
    store
        .park_conversation("p1", "t4", 5_000, 1_000, "{}")
        .await
        .expect("parked");
    store
        .park_conversation("p2", "t5", 20_000, 6_000, "{}")
        .await
        .expect("parked");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM parked_conversations").await,
        1
    );
}

on_both_backends!(a_parked_conversation_is_taken_once_with_its_token_within_its_window,);
