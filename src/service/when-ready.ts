// Values that are at hand or still to come: the hot paths answer without a promise unless something has to wait.

/**
 * fn(value) at once when value is at hand, else once it is: a synchronous answer stays synchronous (a
 * promise would cost the cached authentication or the one-slice search a trip through the event loop).
 * Where fn would be a closure made per call on a hot path, callers write the ternary out instead.
 */
export function whenReady<T, U>(value: T | Promise<T>, fn: (value: T) => U): U | Promise<U> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}
