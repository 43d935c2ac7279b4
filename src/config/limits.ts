// Every limit of the service as a named constant, unit last; imports nothing.

// HTTP input
export const bodyBytesMax = 1024 * 1024;
export const authorizationHeaderBytesMax = 8 * 1024;
export const searchTermCharsMax = 256;
export const idCharsMax = 64;
/** A body that has not finished arriving by then is answered 408 and the connection closed. */
export const bodyReceiveTimeoutMs = 10_000;
/** Requests still receiving their body are checked against bodyReceiveTimeoutMs this often: a 408 comes up to this much late. */
export const bodyReceiveSweepMs = 1_000;

// Entity fields
export const nameCharsMax = 256;
export const descriptionCharsMax = 4096;
export const emailCharsMax = 254;
export const emailLocalCharsMax = 64;
export const passwordCharsMin = 7;
export const passwordBytesMax = 1024;
export const passwordHashCharsMax = 512;
export const customDataBytesMax = 64 * 1024;
export const customDataDepthMax = 32;
/**
 * Arrays and objects nested in a request body, counted on its raw bytes before it is parsed: JSON.parse of deep
 * nesting holds the event loop for long (and the custom_data check after it recurses as deep). Above the depth
 * custom_data may reach inside a body, so an over-deep custom_data still gets that field's own message.
 */
export const bodyJsonDepthMax = 64;
export const ipAddressCharsMax = 64;

// Relations per entity
export const applicationsPerUserMax = 1000;
export const groupsPerUserMax = 1000;
export const apikeysPerUserMax = 100;

// Identifiers
export const entityIdChars = 22;
export const apikeyIdChars = 25;
export const apikeySecretBytes = 32;

// Password hashing (argon2id, OWASP's second recommended setting)
export const argon2MemoryKiBDefault = 19456;
export const argon2IterationsDefault = 2;
export const argon2ParallelismDefault = 1;
export const argon2SaltBytes = 16;
export const argon2HashBytes = 32;
/** Verifications and hashes waiting for a worker; past it requests are shed with 503. */
export const hashQueueMax = 256;
export const hashRetryAfterS = 1;
/** Retry-After of a 503 that names none of its own (starting, storage unavailable). */
export const unavailableRetryAfterS = 1;

// Brute-force protection (src/auth/limiter.ts), in the spirit of Keycloak's detector
/** Failures against one account before each temporary lockout step (Keycloak's failure factor); 0 turns it off. */
export const bruteForceFailureFactorDefault = 30;
/** Failures from one client address (any accounts) before each slowing step of that address (never a lockout); 0 turns it off. */
export const bruteForceAddressFailureFactorDefault = 100;
/** Each lockout step waits this much longer than the one before (Keycloak's wait increment). */
export const bruteForceWaitIncrementMsDefault = 60_000;
/** No lockout lasts longer than this (Keycloak's max wait). */
export const bruteForceMaxWaitMsDefault = 15 * 60_000;
/** A counter with no failure for this long is forgotten (Keycloak's failure reset time). */
export const bruteForceFailureResetMsDefault = 12 * 3600_000;
/** The tarpit: the first failure of an (account, address) pair delays its next attempt this much, doubling per failure;
 *  a slowed address's attempts go this far apart, doubling per slowing step... */
export const bruteForceTarpitStepMsDefault = 250;
/** ...up to this. */
export const bruteForceTarpitMaxMsDefault = 5_000;
/** Failure counters (accounts, addresses and pairs together) held at once; the oldest idle one goes first. */
export const bruteForceCountersMax = 100_000;
/** A counter moves to the end of the limiter's eviction order at most this often. */
export const bruteForceCounterTouchMs = 1000;
/**
 * Slots for (account, address) pairs that succeeded recently, exempt from the account's lockout and the address's
 * slowing: others cannot keep the owner out. A power of two; 16 bytes each (src/auth/trusted-pairs.ts).
 */
export const bruteForceTrustedPairSlots = 1 << 17;
export const bruteForceTrustedPairTtlMs = 30 * 24 * 3600_000;
/**
 * Of a bucket of trusted pairs (8 slots, src/auth/trusted-pairs.ts; an account's pairs all in one), what one account,
 * and one caller of POST /authenticate, may hold once the bucket is full: past it a newcomer of theirs replaces only
 * their own pairs.
 */
export const bruteForceTrustedPairAccountWaysMax = 2;
export const bruteForceTrustedPairCallerWaysMax = 4;
/** A trusted pair loses its exemption once it fails this often itself. */
export const bruteForceTrustedPairFailuresMax = 5;
/** Attempts that may wait for a free slot of one account; more are refused like a lockout. */
export const bruteForceWaitersMax = 1024;
/** Account names and addresses are cut to this in counter keys: longer ones match no account anyway. */
export const bruteForceKeyCharsMax = 256;

// Abuse of the brute-force protection itself (src/auth/limiter.ts, src/auth/hash-pool.ts, src/auth/trusted-pairs-file.ts)
/** A slowed address (see limiter.ts) refuses an attempt that would wait longer than this for its turn, like a wrong password. */
export const bruteForceAddressBacklogMs = 30_000;
/** Counters pushed out of a full table that had reached a lockout or slowing step, kept aside so a flood cannot reset them. */
export const bruteForceEscalationsMax = 50_000;
/** A counter added to a full table pushes out the oldest idle one, passing over at most this many in use (moved newest). */
export const bruteForceEvictionTriesMax = 8;
/** One client address (within its caller's scope) may hold at most this share of the hash queue with attempts of pairs not known to be good... */
export const hashQueueAddressShareMax = 0.25;
/** ...and one caller of POST /authenticate, whatever addresses it names, this share. */
export const hashQueueCallerShareMax = 0.5;
/** A TrustedPairsFile saves the trusted pairs this often (and when closed at a graceful shutdown). */
export const trustedPairsSaveIntervalMs = 5 * 60_000;

// Audit trail (src/service/audit.ts) and log output (src/service/log-writer.ts)
/** Every string in an audit line is cut to this: ids are 22-25 characters, addresses at most 64. */
export const auditFieldCharsMax = 128;
/** An audit line put together as bytes (a credential check's, a recognised authentication's) has a buffer this long; a longer one, only of hostile text, is written as text. */
export const auditLineBytesMax = 4 * 1024;
/** Log lines wait at most this long to be written, together with the others of that time. */
export const logFlushMs = 5;
/** ...or until this much waits, as UTF-8 (at ~35,000 authentications a second, about logFlushMs worth of audit lines). */
export const logBatchBytes = 64 * 1024;
/** A log output that is a full non-blocking pipe is tried again after this. */
export const logBusyRetryMs = 10;

// Metrics (src/http/runtime-stats.ts)
/** The event-loop delay is sampled this often: ~100 timer runs a second, microseconds each. */
export const eventLoopDelaySampleMs = 10;

// Verified-credential cache (src/auth/verify-cache.ts)
/**
 * A remembered verification answers at most this long after the argon2 check it rests on, however often it is
 * used (VERIFY_CACHE_TTL_MS). An hour: a user active all day pays one argon2 an hour, and what the process's memory
 * holds (HMACs of passwords, see the README's security notes) is only of passwords really checked within the hour.
 */
export const verifyCacheTtlMsDefault = 3600_000;
/**
 * ...and only while it is used at least this often (VERIFY_CACHE_IDLE_MS). Ten minutes: a client that
 * authenticates every few minutes (a user between pages, a job polling) keeps its entry, while the verifications
 * of users who have gone leave memory within the time an idle session usually gets.
 */
export const verifyCacheIdleMsDefault = 600_000;
/** Either setting at most a day. */
export const verifyCacheSettingMsMax = 24 * 3600_000;
export const verifyCacheEntriesMax = 100_000;
/** Entries each new verification looks at for idle ones to drop (beyond those past their TTL at the front): a full pass every size / this verifications. */
export const verifyCacheSweepEntries = 4;

// Callers recognised by their Authorization header (src/auth/known-callers.ts)
/** The full check of a known caller, or of a recognised POST /authenticate, runs again after this long: it renews the pair's standing with the limiter. */
export const knownCallerTtlMs = 1_000;
/** Distinct (Authorization header, peer) pairs remembered; the oldest goes first. */
export const knownCallersMax = 10_000;
/** Distinct (POST /authenticate body, Authorization header, peer) triples remembered (src/service/authenticator.ts); the oldest goes first. */
export const knownAttemptsMax = 50_000;
/** A body longer than this is never remembered (an authentication's body is a few hundred bytes). */
export const knownRequestBytesMax = 4 * 1024;
/**
 * Bodies seen once are marked in a bit table of this many bits, by their keyed hash; one is remembered only when
 * it comes again. The table is wiped once it holds knownSightingsMax marks (two per body, about 131,000 bodies), which keeps
 * false repeats under 1 in 64.
 */
export const knownSightingBits = 1 << 21;
export const knownSightingsMax = knownSightingBits / 8;

// Write-ahead log and snapshots
/** A group commit larger than this is split into several writes (still one fdatasync). */
export const walWriteBytesMax = 8 * 1024 * 1024;
export const walRecordBytesMax = 16 * 1024 * 1024;
export const fsyncIntervalMsMax = 1000;
export const snapshotEveryRecordsDefault = 100_000;
export const snapshotEverySecondsDefault = 3600;
/** Entities encoded per event-loop turn while a snapshot is written, so serving never stalls long. */
export const snapshotChunkEntities = 500;
export const snapshotsKept = 2;

// Rendering and answer sizes (src/http/render.ts, src/http/render-cache.ts, src/http/paging.ts)
/**
 * User renderings kept ready (GET of a User, POST /authenticate), overhead included: the
 * hot Users are authenticated, fetched and found again and again. A typical one is 1-3 KB, so this keeps some
 * twenty-five thousand. A bound smaller than the working set costs more than the memory it saves: every rendering
 * evicted and made again survives a young collection and is promoted before it dies.
 */
export const renderCacheBytesMax = 64 * 1024 * 1024;
/** Once the render cache is full, a User not kept yet is taken one time in this many (src/http/render-cache.ts). */
export const renderCacheFullAdmitEvery = 8;
/**
 * Users rendered once are marked in a bit table of this many bits (by id); a rendering is kept from the second on.
 * Wiped once it holds renderSightingsMax marks (two per User, about 131,000 Users), which keeps false repeats under 1 in 64.
 */
export const renderSightingBits = 1 << 21;
export const renderSightingsMax = renderSightingBits / 8;
/** A rendering larger than this is never kept: it would push out hundreds of others (a User in many Applications with large custom_data). */
export const renderCacheEntryBytesMax = 256 * 1024;
/**
 * A page of a paged listing holds items up to this many bytes of JSON (UTF-8); the page is cut short there, and its
 * `next` continues right after its last item. A page always carries at least one item, however large.
 */
export const pageBytesMax = 4 * 1024 * 1024;
/** An unpaged listing at most this long (UTF-16 units, about one chunk of a streamed answer) is answered as one string; a longer one is streamed. */
export const listInlineCharsMax = 64 * 1024;
/** A streamed listing renders at most about this much (plus one item) per event-loop turn, then lets others run. */
export const listSliceCharsMax = 1024 * 1024;

// Snapshot string dictionary (src/persist/snapshot.ts, src/store/compact.ts)
/** Distinct strings one snapshot's dictionary holds (ids that entities refer to, statuses, custom_data values); later ones are written inline. */
export const snapshotSharedStringsMax = 65_536;
/** Longer strings are rarely repeated (hashes, descriptions) and are written inline. */
export const snapshotSharedStringCharsMax = 64;
/** Distinct membership lists one snapshot's dictionary holds (a User's Applications, its Groups); later ones are written element by element. */
export const snapshotSharedListsMax = 65_536;
/** Longer lists are rarely repeated and are written element by element. */
export const snapshotSharedListItemsMax = 16;

// Search
/**
 * Background indexing after a load (memberships, then the search index) takes small steps until this much of an
 * event-loop turn has passed, then lets the loop run. A bound in time rather than a fixed amount of work per turn,
 * because the same work runs many times slower while a full collection is marking, as one does after a large load.
 */
export const indexTurnMs = 5;
/** Users added to the trigram index per step of a turn (indexTurnMs) while it is built in the background (or as many
 *  users' stale postings dropped). Small enough that a step stays well under a millisecond at a million Users, so a
 *  turn ends close to indexTurnMs; larger steps grow faster than linearly, as the lists' tails miss the cache. */
export const searchIndexDocsPerStep = 64;
/** Users whose memberships are indexed per step of a turn (indexTurnMs) after a snapshot load (State.indexStep), before
 *  the search index is built. Small enough that a step stays under a millisecond at a million Users, so a turn ends
 *  close to indexTurnMs. */
export const memberIndexUsersPerStep = 250;
/** Member ids copied per step when the membership lists are trimmed to size after that walk (MemberIndex.trimStep):
 *  a copy costs nanoseconds an id, so a step stays well under a millisecond. */
export const memberTrimIdsPerStep = 50_000;
/**
 * Work one slice of a search does before the event loop gets a turn: Users checked (6 units each in a scan for a
 * 1- or 2-character term), or posting lists probed while intersecting (SearchCursor in src/store/search.ts; a paged
 * search also counts the matches it resolves, src/store/search-page.ts). Sized so that a slice takes about a
 * millisecond at a million Users.
 */
export const searchDocsPerSlice = 25_000;
/** Matches an unpaged search finds before its answer begins; the rest are matched as the answer streams (a short answer is one string: listInlineCharsMax). */
export const searchResultsInlineMax = 1000;
/** How often an idle server checks whether the search index has work (stale postings to drop). */
export const searchIndexIdleCheckMs = 200;

// Paging of list endpoints (src/http/paging.ts)
/** `limit` of a paged listing: 1 .. this many entities per page. */
export const pageItemsMax = 1000;
/**
 * `offset` of a paged listing (offset paging, for clients written against econtext-auth): 0 .. this many entities
 * skipped. A page from an offset is found by counting from the start of the listing's order (by position in the
 * creation-order index for a whole kind; a walk over the members or matches skipped for a subset or a search), where
 * a cursor's is a binary search: a deeper offset would cost each request more, so past this a client pages on with
 * the `next` cursor.
 */
export const pageOffsetMax = 100_000;
/** An opaque cursor is a few dozen characters; anything longer is refused before it is decoded. */
export const pageCursorCharsMax = 128;
/** Slots a page of a subset (the Users of one Application) may always walk before it sorts the subset instead. */
export const pageSubsetWalkSlotsMin = 64;
/** A search page walks at most max(this, limit x pageSearchWalkSlotsPerItem) Users (~1 µs each) before asking the index. */
export const pageSearchWalkSlotsMin = 1024;
export const pageSearchWalkSlotsPerItem = 8;
/** Deleted entries the creation-order index keeps before compacting: this share of its slots, and at least the count. */
export const creationOrderTombstoneShareMax = 0.5;
export const creationOrderTombstonesMin = 1024;

// Offline import (src/cli/)
/** Records appended to the log before the import waits for them to be written, so memory stays bounded. */
export const importRecordsPerFlush = 1000;
/** A line of an import file; an entity is at most a few custom_data limits plus its API Keys. */
export const importLineCharsMax = 4 * 1024 * 1024;

// Shutdown
export const shutdownGraceMs = 10_000;

// --- auth: credential primitives (src/auth/) ---
/** Stored hashes above these are refused on import and answer false on verify: one hostile imported
 *  hash must not pin a worker for seconds or allocate memory without bound. 64 MiB is RFC 9106's
 *  second recommendation and argon2-cffi's default, the largest setting an honest import is likely to carry. */
export const argon2MemoryKiBMax = 65_536;
export const argon2IterationsMax = 10;
export const argon2ParallelismMax = 16;
/** The reference implementation refuses salts under 8 bytes; under 16 bytes of output a hash is weak. */
export const argon2SaltBytesMin = 8;
export const argon2SaltBytesMax = 64;
export const argon2HashBytesMin = 16;
export const argon2HashBytesMax = 64;
/** bcrypt's own range is 4..31; past 16 (about 5 s per verify) an imported hash is a denial of service. */
export const bcryptCostMin = 4;
export const bcryptCostMax = 16;
/** bcrypt reads at most this much of the password; longer inputs are cut here as every bcrypt does. */
export const bcryptPasswordBytesMax = 72;
/** Key for HMAC-SHA256 of the API Key secrets; shorter than the hash output would weaken it. */
export const apikeyServerKeyBytesMin = 32;
export const apikeyNonceBytes = 16;
/** API Key secrets kept derived in memory (src/auth/apikey-secrets.ts), ~150 bytes each: every key of a million seeded users fits. */
export const apikeyDerivedSecretsMax = 100_000;
/** Per-process random keys of the in-memory HMACs: the verified-credential cache's and the known callers'. */
export const perProcessKeyBytes = 32;
/** The niceness of a hash worker thread (Linux; 0 is the event loop's): argon2 yields the CPU to replies and the garbage collector. */
export const hashWorkerNiceness = 10;
/** Reply bodies up to a third of this (in UTF-16 units) are encoded into one reused buffer before the front end copies them out (src/http/front-uws.ts, front-node.ts). */
export const replyEncodeBytesMax = 64 * 1024;
/** Peer addresses whose text is kept by their binary form (src/http/front-uws.ts); the cache starts over when full. */
export const peerAddressTextsMax = 4096;
/** Directories the service creates (data directory, key directory): only its own user may list or enter them (they hold password hashes and the key). */
export const privateDirMode = 0o700;
/** Files the service creates (log, snapshots, key file, exports): only its own user may read or write them. */
export const privateFileMode = 0o600;
/** `flock -n` on the data directory's LOCK answers at once on a local file system; this bounds a hung network one (src/persist/lock.ts). */
export const flockCommandMsMax = 10_000;
/** Permission bits of group and others: a data directory with any set is tightened, a key file with any set refused. */
export const groupOtherModeBits = 0o077;
/** A request line and header fields larger than this are answered 431 and the connection closed (node:http's own default). */
export const headerBytesMax = 16 * 1024;
/** A body refused for its size (413) that declared at most this many bytes is read and dropped before the connection goes on (src/http/adapter.ts drainsRefusedBody). */
export const refusedBodyDrainBytesMax = 16 * 1024 * 1024;
/** A connection with no request in progress is closed after this long: uWS's fixed HTTP idle timeout, applied to node:http too. */
export const connectionIdleMs = 10_000;
/** Random bytes fetched at once for new ids (src/store/ids.ts): ids are public, so a pool of them in memory gives nothing away. */
export const randomPoolBytes = 4096;
/** Longest message the keyed hash handles in its reused buffer (a Basic password is at most the header); longer ones take a fresh buffer. */
export const keyedHashMessageBytesMax = authorizationHeaderBytesMax;
/** Hash workers that die this many times in a row before they finish loading mean they cannot start
 *  (missing file, broken install, bad execArgv): the pool stops respawning and fails every job rather than spin. */
export const hashWorkerStartFailuresMax = 8;

// --- persistence: snapshot and log files (src/persist/) ---
/** --repair: each step sets aside or cuts one damaged file; a data directory never needs more than this many. */
export const repairStepsMax = 256;
/** A snapshot chunk is cut at this many encoded bytes even before snapshotChunkEntities, so a turn
 *  stays a few ms when entities are large (2000 users of 2 MB each would otherwise make one 4 GB frame). */
export const snapshotChunkBytesMax = 256 * 1024;

// --- cluster mode: the log on NATS JetStream (src/cluster/) ---
/** How long one attempt to connect to a NATS server may take to answer (at start and at each reconnection). */
export const clusterConnectTimeoutMs = 5_000;
/** Pause between reconnect attempts to NATS; attempts never stop. */
export const clusterReconnectWaitMs = 250;
/** A publish or stream request not answered in this long counts as failed: the write answers 503. */
export const clusterPublishTimeoutMs = 2_000;
/** JetStream's duplicate window: a retried publish with the same message id inside it is stored once. */
export const clusterDuplicateWindowMs = 120_000;
/** Decisions waiting together go in one message, up to this many. */
export const clusterCommitBatchMax = 256;
/** Times a batch is decided again after another node wrote first, before its writes answer 503. */
export const clusterCommitAttemptsMax = 16;
/** Times a barrier is published again after the leader named a later last sequence (other nodes writing), before the read answers 503. */
export const clusterBarrierAttemptsMax = 16;
/** Longest a strongly consistent read (X-Consistency: strong) waits for this node to apply what the stream held. */
export const clusterStrongReadWaitMs = 5_000;
/** GET /health/ready answers `ready` only when the node applies, within this, the sequence the leader gave a barrier published after the question. */
export const clusterReadyLagMs = 1_000;
/** One readiness barrier answers every GET /health/ready asked within this of it (load balancers poll). */
export const clusterReadyProbeMs = 1_000;
/** Longest a 404 decided on this node's state waits for it to catch up with the leader before it is given (marked stale if it cannot). */
export const clusterStaleCheckWaitMs = 1_000;
/** Snapshots kept in the cluster's Object Store bucket; the stream is purged below the oldest of them. */
export const clusterSnapshotsKept = 2;
/** Times a publish that got no answer is sent again (same message id: stored once), while JetStream elects a new leader. */
export const clusterPublishAttemptsMax = 4;
/** Pause before a publish that got no answer is sent again. */
export const clusterPublishRetryMs = 500;
/** The stream's reader asks for messages anew this often; a silent server is noticed after two missed heartbeats. */
export const clusterFollowExpiresMs = 5_000;
export const clusterFollowHeartbeatMs = 500;
/** How often a node checks that it keeps up with the stream; a reader with no progress while the stream is ahead is started anew. */
export const clusterFollowCheckMs = 1_000;
/** A node publishes at most this many failures per second; more are dropped (each node still counts its own). */
export const sharedFailuresSentPerSecondMax = 20_000;
/**
 * At most this many failures published and not yet confirmed by the server (a PING answered after them); more are
 * dropped. Bounds what the client holds for a connection that died without a word, until NATS notices (its pings).
 */
export const sharedFailuresUnconfirmedMax = 1024;
/** A message on the failures subject larger than this is refused unopened: a node's are far smaller (a sender id, a counter, a time, two names cut to 256, the seal's 28 bytes). */
export const sharedFailureBytesMax = 4096;
/** A node's shutdown waits this long at most for its NATS connection to drain. */
export const clusterCloseMs = 2_000;
/** The stream's reader asks for at most this many bytes at a time: by message count (100 by default), messages near
 *  max_payload would pile up past what the server lets a client have pending, and it cuts the client off as slow. */
export const clusterFollowBytesMax = 8 * 1024 * 1024;
/** A starting node keeps trying this long to reach NATS, and the stream and its bucket while JetStream is unavailable (an election). */
export const clusterStartWaitMs = 30_000;
/**
 * A read from the cluster's bucket (its listing, an object, each next part of a snapshot) that brings nothing for this
 * long is abandoned as unavailable, and a starting node tries again: an Object Store read rests on a consumer that can
 * be left waiting for ever.
 */
export const clusterBucketIdleMs = 5_000;
/** What a node remembers of the latest messages it applied (their fates, for the committers that wrote them): one a slot. */
export const clusterFatesKept = 4096;
/**
 * What authd puts on NATS is sealed (src/cluster/seal.ts). A node logs messages that do not open at most once per this
 * long and kind, with the count since its last line: anyone who may publish on the subjects can send them by the thousand.
 */
export const clusterRejectedLogIntervalMs = 10_000;
/** A cluster snapshot object is sealed in parts of this many bytes, so that a node opens and decodes each as it arrives. */
export const clusterSnapshotSealChunkBytes = 256 * 1024;
/**
 * A shared failure sent longer ago than this (by the sender's clock), or that far in the future, is refused; within
 * it, each sender's counter must grow. Bounds both the clock skew between nodes and how long a receiver remembers a sender.
 */
export const sharedFailureWindowMs = 60_000;
/** Senders of shared failures a node remembers within sharedFailureWindowMs (one per node process started meanwhile). */
export const sharedFailureSendersMax = 1024;
/** Random bytes of a status request (`authctl cluster status`), bound into every node's sealed answer. */
export const nodeStatusNonceBytes = 16;

// ---- access tokens (src/tokens/) ----
/** An Application's token lifetime bounds, and the default of a new one (issue 26). */
export const tokenTtlSecondsMin = 60;
export const tokenTtlSecondsMax = 86_400;
export const tokenTtlSecondsDefault = 900;
/** A retired signing key stays published this long: no token it signed can outlive it (tokenTtlSecondsMax). */
export const signingKeyPublishedAfterRetireMs = tokenTtlSecondsMax * 1000;
/** HS256 wants a key at least as long as its hash output (RFC 7518 3.2): 32 bytes; a generated one is 32 random bytes. */
export const jwtSecretBytesMin = 32;
export const jwtSecretCharsMax = 512;
export const jwtSecretBytesNew = 32;
/** A sealed HS256 secret as an export carries it: the longest secret, sealed and base64url-encoded, fits. */
export const sealedSecretCharsMax = 1024;
/** Longest token POST /tokens/introspect reads; ours are under 1 KB even with a User in many Groups. */
export const tokenCharsMax = 16 * 1024;
/** How far in the future introspection lets a token's `iat` be: the clocks of a cluster's nodes (and a password change's) differ a little. */
export const tokenIssuedAheadSecondsMax = 60;
/** Random bytes in a token's jti, after its 8 bytes of issue time. */
export const tokenJtiRandomBytes = 10;
/** Random bytes drawn at a time for jtis: 409 tokens' worth. */
export const tokenJtiPoolBytes = 4096;
/** Sealed secrets (src/tokens/sealer.ts): AES-256-GCM's 12-byte nonce and 16-byte tag. */
export const sealNonceBytes = 12;
export const sealTagBytes = 16;
