//! Why a TLS handshake failed over a certificate, in words. rustls names the fault
//! (`Other(OtherError(CaUsedAsEndEntity))`, `UnknownIssuer`); a user needs to hear what is
//! wrong with which certificate and what to do about it (docs/security.md "Making
//! certificates").

use rustls::{AlertDescription, CertificateError};
use rustls_pki_types::{ServerName, UnixTime};

const MAKE_ONE: &str = "make one with `ward tls cert create server` or see docs/security.md \"Making certificates\"";

/// What was wrong with a certificate in the TLS handshake with a server: the server's, as
/// this client judged it, or this client's, as the server judged it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateProblem {
    /// The server shows a CA certificate as its own: what `openssl req -x509` makes.
    #[error(
        "the server's certificate is a CA certificate (basicConstraints CA:TRUE); a server needs a leaf \
         certificate signed by a CA: {MAKE_ONE}"
    )]
    CaUsedAsEndEntity,
    /// The server's certificate does not chain to a CA this client trusts.
    #[error(
        "the server's certificate is not signed by a CA this client trusts (--tls-ca): trust the CA that \
         signed it, or give the server a certificate signed by the CA trusted here"
    )]
    UnknownIssuer,
    /// The server's certificate names as its issuer a CA this client trusts, but that CA's
    /// key did not sign it: another CA of the same name did.
    #[error(
        "the server's certificate does not verify with the key of the CA of that name this client trusts \
         (--tls-ca): another CA with the same name signed it; trust that CA, or give the server a certificate \
         signed by the CA trusted here"
    )]
    BadSignature,
    /// The server's certificate does not carry the name this client expects.
    #[error(
        "the server's certificate is not valid for {expected}{}: connect by a name it carries, name one with \
         --tls-server-name, or give the server a certificate for {expected} ({MAKE_ONE})",
        carried(presented)
    )]
    NotValidForName { expected: String, presented: Vec<String> },
    /// The server's certificate has expired (by this machine's clock).
    #[error(
        "the server's certificate expired {}: give the server a new one ({MAKE_ONE}), or check this machine's clock",
        ago(*days)
    )]
    Expired { days: Option<u64> },
    /// The server's certificate is not valid yet (by this machine's clock).
    #[error(
        "the server's certificate is not valid yet{}: check the clocks of this machine and the server",
        until(*days)
    )]
    NotValidYet { days: Option<u64> },
    /// The server's certificate is not for servers (no serverAuth extended key usage).
    #[error("the server's certificate is not one for a server (its extended key usage lacks serverAuth): {MAKE_ONE}")]
    NotForServers,
    /// The server requires a client certificate and this client showed none.
    #[error(
        "the server requires a client certificate: give one signed by its client CA (--tls-cert, --tls-key; \
         make one with `ward tls cert create client`)"
    )]
    ClientCertificateRequired,
    /// The server refused this client's certificate.
    #[error(
        "the server refused this client's certificate ({alert}): it takes one signed by its client CA, valid \
         now, made for clients (`ward tls cert create client`)"
    )]
    ClientCertificateRefused { alert: String },
    /// Any other fault in the server's certificate, as rustls names it.
    #[error("the server's certificate was refused: {0}")]
    Other(String),
}

impl CertificateProblem {
    /// The certificate problem behind a failed handshake with the server at `expected`,
    /// if that is why it failed.
    pub(crate) fn of(error: &std::io::Error, expected: &ServerName<'_>) -> Option<CertificateProblem> {
        match error.get_ref()?.downcast_ref::<rustls::Error>()? {
            rustls::Error::InvalidCertificate(fault) => Some(Self::of_server_cert(fault, expected)),
            _ => Self::refused_by_server(error),
        }
    }

    /// The server's refusal of this client's certificate behind `error`, if that is what it
    /// is. Under TLS 1.3 the client's handshake ends before the server has judged the
    /// client's certificate, so the refusal may come only with the first read or write.
    pub(crate) fn refused_by_server(error: &std::io::Error) -> Option<CertificateProblem> {
        match error.get_ref()?.downcast_ref::<rustls::Error>()? {
            rustls::Error::AlertReceived(AlertDescription::CertificateRequired) => {
                Some(CertificateProblem::ClientCertificateRequired)
            }
            rustls::Error::AlertReceived(alert) if refuses_a_certificate(*alert) => {
                Some(CertificateProblem::ClientCertificateRefused { alert: format!("{alert:?}") })
            }
            _ => None,
        }
    }

    fn of_server_cert(fault: &CertificateError, expected: &ServerName<'_>) -> CertificateProblem {
        let days = |later: &UnixTime, earlier: &UnixTime| {
            Some(later.as_secs().saturating_sub(earlier.as_secs()) / (24 * 60 * 60))
        };
        match fault {
            CertificateError::Other(other)
                if other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity) =>
            {
                CertificateProblem::CaUsedAsEndEntity
            }
            CertificateError::UnknownIssuer => CertificateProblem::UnknownIssuer,
            CertificateError::BadSignature => CertificateProblem::BadSignature,
            CertificateError::NotValidForNameContext { expected, presented } => CertificateProblem::NotValidForName {
                expected: expected.to_str().into_owned(),
                presented: presented.clone(),
            },
            CertificateError::NotValidForName => {
                CertificateProblem::NotValidForName { expected: expected.to_str().into_owned(), presented: Vec::new() }
            }
            CertificateError::ExpiredContext { time, not_after } => {
                CertificateProblem::Expired { days: days(time, not_after) }
            }
            CertificateError::Expired => CertificateProblem::Expired { days: None },
            CertificateError::NotValidYetContext { time, not_before } => {
                CertificateProblem::NotValidYet { days: days(not_before, time) }
            }
            CertificateError::NotValidYet => CertificateProblem::NotValidYet { days: None },
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                CertificateProblem::NotForServers
            }
            other => CertificateProblem::Other(format!("{other:?}")),
        }
    }
}

/// The alerts a server sends when it does not accept the client's certificate.
fn refuses_a_certificate(alert: AlertDescription) -> bool {
    matches!(
        alert,
        AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
    )
}

fn carried(presented: &[String]) -> String {
    match presented {
        [] => String::new(),
        names => format!(" (it carries {})", names.join(", ")),
    }
}

fn ago(days: Option<u64>) -> String {
    match days {
        None => String::new(),
        Some(0) => "less than a day ago".into(),
        Some(days) => format!("{days} days ago"),
    }
}

fn until(days: Option<u64>) -> String {
    match days {
        None => String::new(),
        Some(0) => " (for less than a day)".into(),
        Some(days) => format!(" (for {days} more days)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn io(error: rustls::Error) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, error)
    }

    // G22: a refused certificate is explained in words that name the problem and the way out.
    #[test]
    fn rustls_faults_read_as_what_to_do() {
        let name = ServerName::try_from("127.0.0.1").expect("a name");
        let ca = CertificateError::Other(rustls::OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity)));
        let problem = CertificateProblem::of(&io(rustls::Error::InvalidCertificate(ca)), &name);
        assert_eq!(problem, Some(CertificateProblem::CaUsedAsEndEntity));
        let text = problem.map(|p| p.to_string()).unwrap_or_default();
        assert!(text.contains("CA:TRUE") && text.contains("ward tls cert create server"), "{text}");

        let wrong_name = CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("ward.example.com").expect("a name").to_owned(),
            presented: vec!["IpAddress(127.0.0.1)".into()],
        };
        let text = CertificateProblem::of(&io(rustls::Error::InvalidCertificate(wrong_name)), &name)
            .map(|p| p.to_string())
            .unwrap_or_default();
        assert!(text.contains("not valid for ward.example.com (it carries IpAddress(127.0.0.1))"), "{text}");

        let day = 24 * 60 * 60;
        let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(1000 * day));
        let not_after = UnixTime::since_unix_epoch(std::time::Duration::from_secs(990 * day));
        let expired = CertificateError::ExpiredContext { time, not_after };
        let problem = CertificateProblem::of(&io(rustls::Error::InvalidCertificate(expired)), &name);
        assert_eq!(problem, Some(CertificateProblem::Expired { days: Some(10) }));

        let refused = CertificateProblem::of(&io(rustls::Error::AlertReceived(AlertDescription::UnknownCA)), &name);
        assert!(matches!(refused, Some(CertificateProblem::ClientCertificateRefused { .. })), "{refused:?}");
        let unrelated = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(CertificateProblem::of(&unrelated, &name), None);
    }
}
