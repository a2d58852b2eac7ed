//! TLS for a gateway that faces its clients itself (`--tls-cert`, `--tls-key`): rustls, with
//! the certificate chain and private key read from PEM files. Without them the gateway speaks
//! plain HTTP, meant for a proxy in front that terminates TLS.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The most bytes of a certificate chain or key file: far more than any chain, and a bound
/// on a file that never ends.
const MAX_PEM_BYTES: u64 = 1024 * 1024;

/// The acceptor of the certificate chain in `cert` and the private key in `key`. Errors name
/// the file, never a byte of it.
pub(crate) fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let chain_pem = read(cert)?;
    let chain = CertificateDer::pem_slice_iter(&chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("{}: not a PEM certificate chain", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate in it", cert.display()));
    }
    let key_pem = read(key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| format!("{}: not a PEM private key", key.display()))?;
    let config = ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "{} and {} do not go together: {e}",
                cert.display(),
                key.display()
            )
        })?;
    let mut config = config;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_PEM_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(format!(
            "{}: larger than {MAX_PEM_BYTES} bytes",
            path.display()
        ));
    }
    Ok(bytes)
}
