//! A TLS configuration that can be read again from its files (SIGHUP): connections take the
//! current one when they start, so a reload changes what new connections get and leaves
//! open ones as they are. A reload that fails keeps the configuration in force.

use super::TlsError;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

type Loader<T> = Box<dyn Fn() -> Result<T, TlsError> + Send + Sync>;

pub struct Reloading<T> {
    // A std lock: held to clone or swap an `Arc`, never across an await.
    current: RwLock<Arc<T>>,
    load: Loader<T>,
}

impl<T> Reloading<T> {
    /// Loads the first configuration with `load`, which [`reload`](Self::reload) calls again.
    pub fn new(load: impl Fn() -> Result<T, TlsError> + Send + Sync + 'static) -> Result<Self, TlsError> {
        let first = load()?;
        Ok(Reloading { current: RwLock::new(Arc::new(first)), load: Box::new(load) })
    }

    /// The configuration in force.
    pub fn current(&self) -> Arc<T> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Loads the files again; on success new connections use what they say now, on failure
    /// the configuration in force stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let next = Arc::new((self.load)()?);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = next;
        Ok(())
    }
}

impl<T> fmt::Debug for Reloading<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reloading(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn a_failed_reload_keeps_the_configuration_in_force() {
        let loads = Arc::new(AtomicU32::new(0));
        let counter = loads.clone();
        let reloading = Reloading::new(move || match counter.fetch_add(1, Ordering::Relaxed) {
            1 => Err(TlsError::Empty { path: "x.pem".into(), expected: "CERTIFICATE" }),
            n => Ok(n),
        })
        .expect("first load");
        assert_eq!(*reloading.current(), 0);
        assert!(reloading.reload().is_err());
        assert_eq!(*reloading.current(), 0, "kept after a failed reload");
        reloading.reload().expect("third load");
        assert_eq!(*reloading.current(), 2);
    }
}
