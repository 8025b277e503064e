//! Listening: one accept loop per URL, each connection served on its own task by hyper's
//! HTTP/1 server with a header read timeout (a client that sends half a request and sleeps is
//! dropped and holds up nobody else), a bound on open connections, and TLS (rustls with
//! *ring*) for `https://` URLs, the handshake bounded by the same timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use crate::config::{Listen, TlsConfig};
use crate::error::AgentError;

/// How connections are served.
#[derive(Clone)]
pub(crate) struct ServeOptions {
    /// The longest a client may take to send a request's headers (and to finish TLS).
    pub(crate) header_timeout: Duration,
    /// The most connections open at once.
    pub(crate) max_connections: usize,
}

/// A TLS acceptor (rustls with *ring*, HTTP/1.1) for the PEM certificate chain and key.
pub(crate) fn tls_acceptor(tls: &TlsConfig) -> Result<TlsAcceptor, AgentError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| AgentError::Tls(format!("reading {}: {e}", p.display())))
    };
    let (cert_pem, key_pem) = (read(&tls.cert)?, read(&tls.key)?);
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AgentError::Tls(format!("{}: {e}", tls.cert.display())))?;
    if certs.is_empty() {
        return Err(AgentError::Tls(format!(
            "{}: no certificate in it",
            tls.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| AgentError::Tls(format!("{}: {e}", tls.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| AgentError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| AgentError::Tls(format!("the certificate and key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Binds every URL; returns the listeners with the addresses really bound (port 0 becomes
/// the one the kernel chose).
pub(crate) async fn bind(listen: &[Listen]) -> Result<Vec<(Listen, TcpListener)>, AgentError> {
    let mut out = Vec::new();
    for l in listen {
        let sock = TcpListener::bind(l.addr)
            .await
            .map_err(|e| AgentError::Io(format!("listening on {}: {e}", l.url())))?;
        let addr: SocketAddr = sock
            .local_addr()
            .map_err(|e| AgentError::Io(format!("listening on {}: {e}", l.url())))?;
        out.push((Listen { tls: l.tls, addr }, sock));
    }
    Ok(out)
}

/// Serves `app` on `sock` until the task is dropped.
pub(crate) async fn serve(
    sock: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    opts: ServeOptions,
) {
    let slots = Arc::new(Semaphore::new(opts.max_connections.max(1)));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match sock.accept().await {
            Ok((s, _)) => s,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (app, tls, timeout) = (app.clone(), tls.clone(), opts.header_timeout);
        tokio::spawn(async move {
            let _slot = slot;
            let svc = TowerToHyperService::new(app);
            let mut b = http1::Builder::new();
            b.timer(TokioTimer::new())
                .header_read_timeout(timeout)
                .keep_alive(true);
            match tls {
                Some(acc) => {
                    if let Ok(Ok(s)) = tokio::time::timeout(timeout, acc.accept(stream)).await {
                        let _ = b.serve_connection(TokioIo::new(s), svc).await;
                    }
                }
                None => {
                    let _ = b.serve_connection(TokioIo::new(stream), svc).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_from_pem_files() {
        let dir = std::env::temp_dir().join(format!("clrspy-agent-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
        let cfg = |c: &std::path::Path, k: &std::path::Path| TlsConfig {
            cert: c.to_path_buf(),
            key: k.to_path_buf(),
        };
        assert!(tls_acceptor(&cfg(&cert, &key)).is_ok());
        // Swapped, missing, or another key: clear errors.
        let e = tls_acceptor(&cfg(&key, &cert)).err().unwrap();
        assert!(e.to_string().contains("no certificate"), "{e}");
        let e = tls_acceptor(&cfg(&dir.join("nope"), &key)).err().unwrap();
        assert!(e.to_string().contains("reading"), "{e}");
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(&key, other.serialize_pem()).unwrap();
        let e = tls_acceptor(&cfg(&cert, &key)).err().unwrap();
        assert!(e.to_string().contains("the certificate and key"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
