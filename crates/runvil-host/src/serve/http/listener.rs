//! Connections: accepted up to [`MAX_CONNECTIONS`] at once, TLS when configured, HTTP/1.1 with
//! bounded headers (no more than [`MAX_HEADER_BYTES`], sent within the send timeout, else
//! `431` or a closed connection), each request answered by the endpoint. On a stop signal the
//! listener closes, each connection finishes the request it serves, calls in flight get the
//! drain's time to end, and what is left is cancelled.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::Server;
use super::endpoint::{self, SEND_TIMEOUT};
use crate::signals::Stop;

/// The most bytes of a request's line and headers: far more than any client sends, a bound on
/// what a request can make the gateway hold before it is read.
pub(crate) const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Connections open at once, before any is authenticated: a bound on what clients that never
/// finish a request can hold (each is closed after the send timeout).
pub(crate) const MAX_CONNECTIONS: usize = 1024;
/// How long cancelled calls get to write their audit lines once the drain has run out.
const CANCELLED_CALLS_END: Duration = Duration::from_secs(5);

/// Serves `listener` until `stop` (a signal), then drains for up to `drain`; answers the
/// signal.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    server: Arc<Server>,
    drain: Duration,
    stop: impl Future<Output = Stop>,
) -> Stop {
    let graceful = GracefulShutdown::new();
    let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(stop);
    let stop = loop {
        let place = tokio::select! {
            stop = &mut stop => break stop,
            place = Arc::clone(&places).acquire_owned() => place,
        };
        let Ok(place) = place else { continue };
        let accepted = tokio::select! {
            stop = &mut stop => break stop,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        let server = Arc::clone(&server);
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => connection(stream, server, watcher).await,
                Some(tls) => {
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(SEND_TIMEOUT, tls.accept(stream)).await
                    {
                        connection(stream, server, watcher).await;
                    }
                }
            }
            drop(place);
        });
    };
    drop(listener);
    eprintln!(
        "runvil: {}: finishing the calls in flight (up to {} s)",
        stop.said(),
        drain.as_secs()
    );
    server.calls.close();
    let finished = async {
        tokio::join!(graceful.shutdown(), server.calls.wait());
    };
    tokio::pin!(finished);
    if tokio::time::timeout(drain, &mut finished).await.is_err() {
        eprintln!("runvil: the drain ran out: cancelling the calls still running");
        server.ended.cancel();
        // The cancelled calls write their audit lines and answer, and their connections close.
        let _ = tokio::time::timeout(CANCELLED_CALLS_END, finished).await;
    }
    stop
}

/// Serves one connection until it closes, or until the drain asks it to.
async fn connection<IO>(io: IO, server: Arc<Server>, watcher: hyper_util::server::graceful::Watcher)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let server = Arc::clone(&server);
        async move { Ok::<_, Infallible>(endpoint::handle(&server, request).await) }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(SEND_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .serve_connection(TokioIo::new(io), service);
    let _ = watcher.watch(connection).await;
}
