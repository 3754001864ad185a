//! What the application can see of its session.

/// The session as this client knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Connected to a server; requests flow.
    Connected,
    /// The connection dropped; the client is reconnecting. The session (and its ephemerals)
    /// lives on if a server is reached within the session timeout.
    Disconnected,
    /// The server ended the session (heartbeats stopped for longer than the timeout). Every
    /// request now fails with `SessionExpired`.
    Expired,
    /// The application closed the client.
    Closed,
}

impl SessionState {
    /// True once the session can never serve requests again.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }
}
