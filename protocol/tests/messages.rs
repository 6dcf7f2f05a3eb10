//! Wire messages: the JSON shapes docs/PROTOCOL.md promises, and strict decoding.

use banter_protocol::{ActionType, ClientMessage, ErrorCode, ServerMessage};

#[test]
fn client_messages_decode_from_the_documented_json() {
    let m: ClientMessage =
        serde_json::from_str(r#"{"type":"action","id":7,"action":"CheckQuest","payload":"Q|A|B"}"#)
            .expect("decodes");
    assert_eq!(
        m,
        ClientMessage::Action {
            id: Some(7),
            action: ActionType::CheckQuest,
            payload: "Q|A|B".into()
        }
    );
    let m: ClientMessage = serde_json::from_str(
        r#"{"type":"talk","npc":"Dockmaster Reyes","instance":"reyes-north"}"#,
    )
    .expect("decodes");
    assert_eq!(m.kind(), "talk");
    assert_eq!(m.id(), None);
}

#[test]
fn unknown_types_fields_and_actions_are_refused() {
    for bad in [
        r#"{"type":"teleport","position":[0,0,0]}"#,
        r#"{"type":"advance","node":"A","extra":1}"#,
        r#"{"type":"action","action":"GiveMeGold","payload":""}"#,
        r#"{"type":"advance"}"#,
        r#"{"node":"A"}"#,
        r#"[1,2,3]"#,
    ] {
        assert!(serde_json::from_str::<ClientMessage>(bad).is_err(), "{bad}");
    }
}

#[test]
fn errors_carry_a_stable_snake_case_code() {
    let text = serde_json::to_string(&ServerMessage::Error {
        id: Some(3),
        code: ErrorCode::PayloadMismatch,
        message: "no".into(),
        retryable: ErrorCode::PayloadMismatch.retryable(),
    })
    .expect("encodes");
    assert_eq!(
        text,
        r#"{"type":"error","id":3,"code":"payload_mismatch","message":"no","retryable":false}"#
    );
}

#[test]
fn error_code_names_are_their_wire_form() {
    for code in ErrorCode::ALL {
        let wire = serde_json::to_string(&code).expect("encodes");
        assert_eq!(wire, format!("\"{}\"", code.name()));
    }
}

#[test]
fn the_frame_decoder_keeps_the_id_of_a_frame_it_refuses() {
    let decoded =
        ClientMessage::decode(r#"{"type":"resume","id":4,"token":"t"}"#).expect("decodes");
    assert_eq!(
        decoded,
        ClientMessage::Resume {
            id: Some(4),
            token: "t".into()
        }
    );
    for (frame, id) in [
        (r#"{"type":"dance","id":7}"#, Some(7)),
        (r#"{"type":"close","id":3,"extra":1}"#, Some(3)),
        (r#"{"type":"close","id":"3"}"#, None),
        (r#"{"type":"move","position":[1e400,0,0]}"#, None),
        ("not json", None),
        ("", None),
    ] {
        let refused = ClientMessage::decode(frame).expect_err(frame);
        assert_eq!(refused.id, id, "{frame}");
        assert!(!refused.message.is_empty());
    }
}
