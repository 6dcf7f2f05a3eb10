//! The client's side of the walk (article section 6.1): what to show, and what to send when.
//!
//! A [`ClientWalk`] wraps the same [`Walk`] the server keeps, so the client's idea of `R` and of
//! the armings is the server's, and adds the one thing only a client has: the order in which
//! messages go out. A node's actions are sent when the node is shown. A response's actions are
//! held and sent with the player's next accepted step (an advance, or a pick), or at once when
//! nothing follows. A response carrying CheckQuest does not follow its `NextNode`: its actions go
//! out at once and the walk waits for the server's jump. When nothing follows, the held actions
//! go out, then `close`.
//!
//! **One answer per input.** Every input is answered by the walk the server keeps, so a client
//! refuses exactly what the server would refuse, with the same code, and accepts exactly what it
//! would accept: a line or response shown earlier (`R` only grows) may be advanced or picked
//! again, on screen or not.
//!
//! **A shared conversation** (PROTOCOL.md section 17) is walked by the group: the player's own
//! steps do not move this walk. Picking a response is a vote ([`ClientWalk::vote`] sends the
//! `choose`), and only the leader advances ([`ClientWalk::propose_advance`] sends the
//! `advance`); the walk moves when the server says the group did ([`ClientWalk::follow_chosen`]
//! for `chosen`, [`ClientWalk::follow_advanced`] for `advanced`, [`ClientWalk::jump`] for
//! `jump`). Following sends what moving sends in a solo walk: the held actions (the group moved
//! past the reply on screen), the next line's node actions, and the chosen response's actions
//! (held while a line follows) only if that response was shown to this player. A walk opened
//! with [`ClientWalk::open_shared`] says so ([`ClientWalk::is_shared`]); its `choose` and
//! `advance` are the solo steps and must not be used on it.

use banter_protocol::{ClientMessage, ErrorCode};

use crate::condition::Facts;
use crate::graph::{ActionIndex, DialogueGraph, VertexId};
use crate::walk::{Shown, Walk, WalkError};

/// A message the client sends, in the order it must be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outgoing {
    Advance(VertexId),
    Choose(VertexId),
    /// The authored action at this index, sent with its type and canonical payload.
    Action(ActionIndex),
    /// The conversation has ended: `close`.
    Close,
}

impl Outgoing {
    /// The wire message for this step, named from `graph` (the graph the walk queued it over):
    /// `advance` and `choose` by vertex name, `action` with its type and canonical payload.
    /// `None` only for a step from another graph, whose vertex or action `graph` lacks.
    pub fn message(self, graph: &DialogueGraph) -> Option<ClientMessage> {
        Some(match self {
            Outgoing::Advance(v) => ClientMessage::Advance {
                id: None,
                node: graph.vertex(v)?.name.to_string(),
            },
            Outgoing::Choose(v) => ClientMessage::Choose {
                id: None,
                response: graph.vertex(v)?.name.to_string(),
            },
            Outgoing::Action(i) => {
                let action = graph.action(i)?;
                ClientMessage::Action {
                    id: None,
                    action: action.action_type,
                    payload: action.payload.to_string(),
                }
            }
            Outgoing::Close => ClientMessage::Close { id: None },
        })
    }
}

/// What the client has on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// An NPC line, with [`ClientWalk::choices`] under it. A line that carries a CheckQuest
    /// itself stays on screen, with no choices and no advance, until the server's jump.
    Line(VertexId),
    /// Waiting for the server's jump after a CheckQuest response.
    Waiting,
    /// The conversation has ended and `close` was queued.
    Ended,
}

/// Why a player's own step in a shared conversation is refused: as the walk refuses a
/// `choose` or an `advance`, or for a reason only a group has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SharedError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    /// A vote for a response under another line than the one on screen (the ballot's).
    #[error("only the current line's responses can be voted for")]
    NotCurrent,
    /// An `advance` from a participant who does not lead the conversation.
    #[error("only the conversation's leader advances")]
    NotLeader,
}

impl SharedError {
    /// The wire code the server answers the step with (PROTOCOL.md sections 7 and 17.6).
    pub fn code(self) -> ErrorCode {
        match self {
            SharedError::NotCurrent => ErrorCode::NotCurrent,
            SharedError::NotLeader => ErrorCode::NotLeader,
            SharedError::Walk(e) => match e {
                WalkError::UnknownVertex => ErrorCode::UnknownVertex,
                WalkError::NotReachable => ErrorCode::NotReachable,
                WalkError::NotALine => ErrorCode::NotALine,
                WalkError::NotAResponse => ErrorCode::NotAResponse,
                WalkError::AwaitsChoice => ErrorCode::AwaitsChoice,
                WalkError::AwaitsJump => ErrorCode::AwaitsJump,
                WalkError::ConditionFailed => ErrorCode::ConditionFailed,
                WalkError::ResponseDisabled => ErrorCode::ResponseDisabled,
                WalkError::NotArmed => ErrorCode::NotArmed,
                WalkError::PayloadMismatch => ErrorCode::PayloadMismatch,
                WalkError::Closed => ErrorCode::NoConversation,
                WalkError::BadJumpTarget => ErrorCode::Internal,
            },
        }
    }
}

/// Who moves a client's walk: the player alone, or a group (and then whether this player leads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Solo,
    Shared { leads: bool },
}

/// A client's conversation: the shared walk plus message ordering.
#[derive(Clone, Debug)]
pub struct ClientWalk {
    walk: Walk,
    screen: Screen,
    held: Vec<ActionIndex>,
    mode: Mode,
}

impl ClientWalk {
    /// Opens on the entry the server named, queueing the entry line's actions.
    pub fn open(
        graph: &DialogueGraph,
        entry: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<ClientWalk, WalkError> {
        let (walk, shown) = Walk::open(graph, entry, facts)?;
        let mut client = ClientWalk {
            walk,
            screen: Screen::Ended,
            held: Vec::new(),
            mode: Mode::Solo,
        };
        client.on_shown(graph, shown, out);
        Ok(client)
    }

    /// Opens a shared conversation (an `opened` with `shared`) on `entry`, the group's current
    /// line, queueing its actions. `leads`: this player is the conversation's leader
    /// (`shared.leader`); [`ClientWalk::set_leader`] follows later changes (`participants`).
    pub fn open_shared(
        graph: &DialogueGraph,
        entry: VertexId,
        facts: &dyn Facts,
        leads: bool,
        out: &mut Vec<Outgoing>,
    ) -> Result<ClientWalk, WalkError> {
        let mut client = ClientWalk::open(graph, entry, facts, out)?;
        client.mode = Mode::Shared { leads };
        Ok(client)
    }

    /// True for a shared conversation: the player's steps are votes and proposals, and the walk
    /// moves only with the group's (`follow_chosen`, `follow_advanced`, `jump`).
    pub fn is_shared(&self) -> bool {
        matches!(self.mode, Mode::Shared { .. })
    }

    /// True when this player leads the shared conversation (and so may advance it).
    pub fn is_leader(&self) -> bool {
        matches!(self.mode, Mode::Shared { leads: true })
    }

    /// The conversation's leader changed (`participants.leader`): whether it is this player.
    /// Nothing for a solo walk.
    pub fn set_leader(&mut self, leads: bool) {
        if let Mode::Shared { .. } = self.mode {
            self.mode = Mode::Shared { leads };
        }
    }

    pub fn screen(&self) -> Screen {
        self.screen
    }

    /// The walk this client mirrors of the server's.
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// The responses the player may pick under the current line, in priority order: those
    /// shown with it whose `Conditions` hold against `facts` (the facts now).
    pub fn choices<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        facts: &'g dyn Facts,
    ) -> impl Iterator<Item = VertexId> + 'g {
        let line = match self.screen {
            Screen::Line(line) => Some(line),
            _ => None,
        };
        line.into_iter()
            .flat_map(move |line| self.walk.choices(graph, line, facts))
    }

    /// The responses under the current line shown greyed out, with their reasons, in priority
    /// order (PROTOCOL.md 10.1): picking one is `response_disabled`.
    pub fn greyed<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        facts: &'g dyn Facts,
    ) -> impl Iterator<Item = (VertexId, &'g str)> + 'g {
        let line = match self.screen {
            Screen::Line(line) => Some(line),
            _ => None,
        };
        line.into_iter()
            .flat_map(move |line| self.walk.greyed(graph, line, facts))
    }

    /// True when the current line waits for the player to advance past it: no choice holds
    /// and no quest check awaits its jump. In a shared conversation, only for its leader.
    pub fn can_advance(&self, graph: &DialogueGraph, facts: &dyn Facts) -> bool {
        if let Mode::Shared { leads: false } = self.mode {
            return false;
        }
        match self.screen {
            Screen::Line(line) => {
                !self.walk.awaits_jump()
                    && self.choices(graph, facts).next().is_none()
                    && graph.vertex(line).is_some_and(|v| !v.awaits_jump)
            }
            _ => false,
        }
    }

    /// The player advances past the NPC line `line`: normally the line on screen, but any line
    /// the walk accepts (one shown earlier shows its next line again).
    pub fn advance(
        &mut self,
        graph: &DialogueGraph,
        line: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.advance(graph, line, facts)?;
        out.push(Outgoing::Advance(line));
        out.extend(self.held.drain(..).map(Outgoing::Action));
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The player advances past the line on screen.
    pub fn advance_current(
        &mut self,
        graph: &DialogueGraph,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        match self.screen {
            Screen::Line(line) => self.advance(graph, line, facts, out),
            Screen::Waiting => Err(WalkError::AwaitsJump),
            Screen::Ended => Err(WalkError::Closed),
        }
    }

    /// The player picks `response`: normally one of [`ClientWalk::choices`], but any response
    /// the walk accepts (one shown earlier may be picked again).
    pub fn choose(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.choose(graph, response, facts)?;
        out.push(Outgoing::Choose(response));
        // Picking a response is moving past the reply on screen.
        out.extend(self.held.drain(..).map(Outgoing::Action));
        let actions = graph.actions(response).map(|(i, _)| i);
        match shown {
            Shown::Line(_) => self.held.extend(actions),
            Shown::AwaitJump | Shown::End => out.extend(actions.map(Outgoing::Action)),
        }
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The server decided where the conversation goes (a quest check's result).
    pub fn jump(
        &mut self,
        graph: &DialogueGraph,
        target: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.jump_to(graph, target, facts)?;
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// A vote in a shared conversation: the player picks `response` under the line on screen.
    /// Checked as the server checks it: as a `choose` (the response was shown to this player
    /// and its `Conditions` hold now), then that it is under the line on screen (the ballot's
    /// line, else `NotCurrent`). Sends the `choose`; the walk does not move (the group's
    /// decision comes as `chosen`). A player may vote again, for another response or the same.
    pub fn vote(
        &self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), SharedError> {
        self.walk.clone().choose(graph, response, facts)?;
        let current = match self.screen {
            Screen::Line(line) => Some(line),
            Screen::Waiting | Screen::Ended => None,
        };
        if graph.line_of(response) != current || current.is_none() {
            return Err(SharedError::NotCurrent);
        }
        out.push(Outgoing::Choose(response));
        Ok(())
    }

    /// The leader advances past `line` in a shared conversation. Refused with `NotLeader` for
    /// any other participant (once the walk is known open), else checked as an `advance`.
    /// Sends the `advance`; the walk moves when the server's `advanced` comes back
    /// ([`ClientWalk::follow_advanced`]).
    pub fn propose_advance(
        &self,
        graph: &DialogueGraph,
        line: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), SharedError> {
        if self.walk.is_closed() {
            return Err(WalkError::Closed.into());
        }
        if let Mode::Shared { leads: false } = self.mode {
            return Err(SharedError::NotLeader);
        }
        self.walk.clone().advance(graph, line, facts)?;
        out.push(Outgoing::Advance(line));
        Ok(())
    }

    /// The group's decision (`chosen`): `response` won, and `node` is the line shown next
    /// (`None`: a quest check's jump is awaited, or the conversation ends). The held actions go
    /// out (the group moved past the reply on screen); the response's actions are armed and
    /// sent only if it was shown to this player and holds for `facts`: held while a line
    /// follows, at once otherwise; then `node` is shown with `facts`, as a `jump` shows it, or
    /// the conversation ends (`close`).
    pub fn follow_chosen(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        node: Option<VertexId>,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let mine = self.walk.shown_and_holds(graph, response, facts);
        self.walk.follow_chosen(graph, response, node, facts)?;
        out.extend(self.held.drain(..).map(Outgoing::Action));
        let shown = match node {
            Some(line) => Shown::Line(line),
            None if graph.vertex(response).is_some_and(|v| v.awaits_jump) => Shown::AwaitJump,
            None => Shown::End,
        };
        if mine {
            let actions = graph.actions(response).map(|(i, _)| i);
            match shown {
                Shown::Line(_) => self.held.extend(actions),
                Shown::AwaitJump | Shown::End => out.extend(actions.map(Outgoing::Action)),
            }
        }
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The leader advanced (`advanced`): the held actions go out, then `node` is shown with
    /// `facts`, as a `jump` shows it, or (`None`) the conversation ends (`close`).
    pub fn follow_advanced(
        &mut self,
        graph: &DialogueGraph,
        node: Option<VertexId>,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        self.walk.follow_advanced(graph, node, facts)?;
        out.extend(self.held.drain(..).map(Outgoing::Action));
        self.on_shown(graph, node.map_or(Shown::End, Shown::Line), out);
        Ok(())
    }

    /// The player closes the conversation before its end (for a shared conversation: leaves
    /// it, and the others go on). Sends `close`; every later step is refused as closed. Nothing
    /// held is sent: the player did not move past the reply on screen.
    pub fn close(&mut self, out: &mut Vec<Outgoing>) {
        if self.screen == Screen::Ended {
            return;
        }
        self.held.clear();
        out.push(Outgoing::Close);
        self.walk.close();
        self.screen = Screen::Ended;
    }

    fn on_shown(&mut self, graph: &DialogueGraph, shown: Shown, out: &mut Vec<Outgoing>) {
        self.screen = match shown {
            Shown::Line(line) => {
                out.extend(graph.actions(line).map(|(i, _)| Outgoing::Action(i)));
                Screen::Line(line)
            }
            Shown::AwaitJump => Screen::Waiting,
            Shown::End => {
                out.extend(self.held.drain(..).map(Outgoing::Action));
                out.push(Outgoing::Close);
                self.walk.close();
                Screen::Ended
            }
        };
    }
}
