//! The signals a long-running command handles itself instead of dying at once: SIGTERM and
//! SIGINT, and for the commands that run CMD under a lock, SIGHUP too.
//!
//! CMD runs in a process group of its own (see `group`), so a closing terminal's SIGHUP
//! reaches ward but not CMD: ward must take it and pass it on, or it would die and leave CMD
//! running without the lock.

/// One signal ward received: its number (for the exit status 128+N) and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub number: i32,
    /// `SIGTERM`, `SIGINT` or `SIGHUP`.
    pub name: &'static str,
}

impl Received {
    const TERM: Received = Received { number: 15, name: "SIGTERM" };
    const INT: Received = Received { number: 2, name: "SIGINT" };
    const HUP: Received = Received { number: 1, name: "SIGHUP" };

    /// The name without its `SIG`, as `kill -s` takes it.
    pub fn short_name(self) -> &'static str {
        self.name.trim_start_matches("SIG")
    }
}

/// The handled signals, caught from the moment [`Signals::install`] returns.
pub struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    /// Only for the commands that pass signals on to CMD: the others keep the default (a
    /// hangup ends them at once, as it always did).
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers now, so a signal arriving before anyone waits is kept; with
    /// `hangup`, SIGHUP's too.
    #[cfg(unix)]
    pub fn install(hangup: bool) -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
            hup: if hangup { signal(SignalKind::hangup()).ok() } else { None },
        }
    }

    #[cfg(not(unix))]
    pub fn install(_hangup: bool) -> Signals {
        Signals {}
    }

    /// The next handled signal.
    #[cfg(unix)]
    pub async fn recv(&mut self) -> Received {
        async fn next(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                // `None` only if the runtime is shutting down: never resolve.
                Some(signal) => {
                    if signal.recv().await.is_none() {
                        std::future::pending::<()>().await
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = next(&mut self.term) => Received::TERM,
            () = next(&mut self.int) => Received::INT,
            () = next(&mut self.hup) => Received::HUP,
        }
    }

    #[cfg(not(unix))]
    pub async fn recv(&mut self) -> Received {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        Received::INT
    }
}
