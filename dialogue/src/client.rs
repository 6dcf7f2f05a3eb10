//! The client's side of the walk (article section 6.1): what to show, and what to send when.
//!
//! A [`ClientWalk`] wraps the same [`Walk`] the server keeps, so the client's idea of `R` and of
//! the armings is the server's, and adds the one thing only a client has: the order in which
//! messages go out. A node's actions are sent when the node is shown. A response's actions are
//! held and sent once the player advances past the NPC's reply (by advancing, or by picking one
//! of the reply's responses), or at once when nothing follows. A response carrying CheckQuest
//! does not follow its `NextNode`: its actions go out at once and the client waits for the
//! server's jump.

use banter_protocol::ClientMessage;

use crate::condition::Facts;
use crate::graph::{ActionIndex, DialogueGraph, VertexId, VertexKind};
use crate::walk::{Shown, Walk, WalkError};

/// A message the client sends, in the order it must be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outgoing {
    Advance(VertexId),
    Choose(VertexId),
    /// The authored action at this index, sent with its type and canonical payload.
    Action(ActionIndex),
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
        })
    }
}

/// What the client has on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// An NPC line, with [`ClientWalk::choices`] under it.
    Line(VertexId),
    /// Waiting for the server's jump after a CheckQuest.
    Waiting,
    /// The conversation has nothing more to show; the client closes it.
    Ended,
}

/// A client's conversation: the shared walk plus message ordering.
#[derive(Clone, Debug)]
pub struct ClientWalk {
    walk: Walk,
    screen: Screen,
    held: Vec<ActionIndex>,
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
        };
        client.on_shown(graph, shown, out);
        Ok(client)
    }

    pub fn screen(&self) -> Screen {
        self.screen
    }

    /// The walk this client mirrors of the server's.
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// The responses under the current line, in priority order.
    pub fn choices<'g>(&'g self, graph: &'g DialogueGraph) -> impl Iterator<Item = VertexId> + 'g {
        let line = match self.screen {
            Screen::Line(line) => Some(line),
            _ => None,
        };
        line.into_iter()
            .flat_map(move |line| self.walk.choices(graph, line))
    }

    /// True when the current line waits for the player to advance past it.
    pub fn can_advance(&self, graph: &DialogueGraph) -> bool {
        match self.screen {
            Screen::Line(line) => {
                self.choices(graph).next().is_none()
                    && graph.vertex(line).is_some_and(|v| !v.awaits_jump)
            }
            _ => false,
        }
    }

    /// The player advances past the current line.
    pub fn advance(
        &mut self,
        graph: &DialogueGraph,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let line = match self.screen {
            Screen::Line(line) => line,
            Screen::Waiting => return Err(WalkError::AwaitsJump),
            Screen::Ended => return Err(WalkError::Closed),
        };
        let shown = self.walk.advance(graph, line, facts)?;
        out.push(Outgoing::Advance(line));
        out.extend(self.held.drain(..).map(Outgoing::Action));
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The player picks a response under the current line.
    pub fn choose(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        if !self.choices(graph).any(|r| r == response) {
            // The server's order: something never shown is not reachable; a line shown is not
            // a response.
            let shown_line = self.walk.is_reachable(response)
                && graph
                    .vertex(response)
                    .is_some_and(|v| v.kind != VertexKind::Response);
            return Err(if shown_line {
                WalkError::NotAResponse
            } else {
                WalkError::NotReachable
            });
        }
        let shown = self.walk.choose(graph, response, facts)?;
        out.push(Outgoing::Choose(response));
        // Picking a response to the reply is advancing past the reply.
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

    fn on_shown(&mut self, graph: &DialogueGraph, shown: Shown, out: &mut Vec<Outgoing>) {
        self.screen = match shown {
            Shown::Line(line) => {
                out.extend(graph.actions(line).map(|(i, _)| Outgoing::Action(i)));
                Screen::Line(line)
            }
            Shown::AwaitJump => Screen::Waiting,
            Shown::End => {
                out.extend(self.held.drain(..).map(Outgoing::Action));
                Screen::Ended
            }
        };
    }
}
