//! Binding the listeners. An address some source asked for must bind, and the error names
//! the option and the listener; a default address that is taken (a real ZooKeeper on 2181,
//! another Ward's admin port) leaves that listener off, said on stdout with the listening
//! lines.

use crate::args::Listener;
use crate::error::StartError;
use std::net::{SocketAddr, TcpListener};
use ward_server::net::listener::Prebound;

/// Binds a listener that must bind: the first of its addresses that does.
pub fn bind(listener: &Listener, name: &'static str) -> Result<TcpListener, StartError> {
    let mut last = None;
    for addr in &listener.addrs {
        match TcpListener::bind(addr) {
            Ok(bound) => return Ok(bound),
            Err(error) => last = Some((*addr, error)),
        }
    }
    let (addr, source) = last.unwrap_or_else(|| {
        (SocketAddr::from(([0, 0, 0, 0], 0)), std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))
    });
    Err(StartError::Bind { key: listener.key, listener: name, addr: addr.to_string(), source })
}

/// The tokio form of [`bind`]; call inside the runtime.
pub fn bind_tokio(listener: &Listener, name: &'static str) -> Result<tokio::net::TcpListener, StartError> {
    let bound = bind(listener, name)?;
    bound
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(bound))
        .map_err(|source| StartError::Bind { key: listener.key, listener: name, addr: listener.shown(), source })
}

/// Binds a listener that has a default address, unless it is off. A default address that
/// is taken leaves it off and adds a line to `not_started` (printed on stdout after the
/// listening lines).
pub fn bind_optional(
    wanted: Option<&Listener>,
    name: &'static str,
    not_started: &mut String,
) -> Result<Option<Prebound>, StartError> {
    let Some(listener) = wanted else { return Ok(None) };
    match bind(listener, name) {
        Ok(bound) => Prebound::from_std(bound).map(Some).map_err(|source| StartError::Bind {
            key: listener.key,
            listener: name,
            addr: listener.shown(),
            source,
        }),
        Err(StartError::Bind { addr, source, .. }) if !listener.explicit => {
            let flag = format!("--{}", listener.key);
            tracing::warn!(%addr, error = %source, "{name} listener not started; use {flag} ADDR");
            not_started
                .push_str(&format!("ward-server {name} not listening: {addr} is taken ({source}); use {flag} ADDR\n"));
            Ok(None)
        }
        Err(error) => Err(error),
    }
}
