//! The TLS settings of the Pack's clients: reqwest's own (rustls, the platform's trust roots,
//! HTTP/2 or 1.1 by ALPN), with the trust roots read when a first certificate is to be
//! verified instead of when a client is built.
//!
//! reqwest's verifier (`rustls-platform-verifier`) reads every file of the system's
//! certificate folder as it is made: on a Debian machine about 300 files, 4 ms of a one-shot
//! `runvil call`'s 13 (BENCHMARKS.md). A Pack whose servers are all plain HTTP on loopback
//! never verifies a certificate, and a Pack of HTTPS servers reads the roots once per client,
//! as before, at its first handshake. rustls and reqwest offer no lazy verifier, so this one
//! wraps the platform's: it decides nothing itself.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, Error, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// What reqwest would build for the Pack's clients (its crypto provider, TLS 1.2 and 1.3,
/// ALPN `h2` then `http/1.1`), verifying with the platform's roots, read on first use; an
/// error only when the process installed a provider without those versions, which reqwest
/// refuses too.
pub(crate) fn client_config() -> Result<ClientConfig, Error> {
    // reqwest's choice: a provider the process installed, else aws-lc-rs, which it builds with.
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let verifier = Arc::new(LazyPlatformVerifier {
        provider: Arc::clone(&provider),
        platform: OnceLock::new(),
    });
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform's verifier, made on the first certificate to verify; a failure to read the
/// roots is kept and refuses every handshake, as reqwest refuses to build a client then.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    platform: OnceLock<Result<Verifier, Error>>,
}

impl LazyPlatformVerifier {
    fn platform(&self) -> Result<&Verifier, Error> {
        self.platform
            .get_or_init(|| Verifier::new(Arc::clone(&self.provider)))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.platform()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.platform()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.platform()?.verify_tls13_signature(message, cert, dss)
    }

    /// Asked for the first message of every handshake, so it must not read the roots: the
    /// schemes are the provider's, which is what the platform's verifier answers too.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
