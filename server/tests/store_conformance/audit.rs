//! The audit log: records round-trip in order and are pruned by age.

use std::time::Duration;

use banter_server::store::AuditRecord;

use crate::store_support::{OpenStore, TestDb};

async fn audit_records_round_trip_and_prune(db: &TestDb) {
    let store = db.open().await;
    let record = |message: &str, code: Option<&str>, recorded_us: i64| AuditRecord {
        player_id: "p1".into(),
        conversation: Some("c1".into()),
        message: message.into(),
        code: code.map(Into::into),
        detail: None,
        recorded_us,
    };
    let records = [
        record("advance", None, 10),
        record("choose", Some("not_offered"), 20),
        record("action", None, 40),
    ];
    store.record_audit(&records).await.expect("record");
    store.record_audit(&[]).await.expect("record nothing");
    let latest = store.audit_for_player("p1", 2).await.expect("read");
    assert_eq!(
        latest.iter().map(|e| e.record.clone()).collect::<Vec<_>>(),
        records[1..].to_vec()
    );
    assert!(latest[0].id < latest[1].id && latest[0].at_ms > 1_600_000_000_000);
    // A row written later but recorded earlier (a step in its own transaction, committed before
    // the queue behind it) reads in the order it was recorded, not written.
    let late = record("close", None, 30);
    store
        .record_audit(std::slice::from_ref(&late))
        .await
        .expect("record");
    let all = store.audit_for_player("p1", 10).await.expect("read");
    assert_eq!(
        all.iter().map(|e| e.record.recorded_us).collect::<Vec<_>>(),
        [10, 20, 30, 40]
    );
    assert_eq!(
        store.audit_for_player("p2", 10).await.expect("read").len(),
        0
    );
    assert_eq!(store.prune_audit(Duration::from_secs(3600)).await, Ok(0));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.prune_audit(Duration::from_millis(5)).await, Ok(4));
    assert!(
        store
            .audit_for_player("p1", 10)
            .await
            .expect("read")
            .is_empty()
    );
}

on_both_backends!(audit_records_round_trip_and_prune,);
