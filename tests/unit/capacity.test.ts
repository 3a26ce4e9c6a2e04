import { EndpointCapacity } from '../../src/calls';

describe('EndpointCapacity', () => {
  it('never lends more slots than its limit, and a released slot goes to the next waiter', async () => {
    const capacity = new EndpointCapacity(1);
    const first = await capacity.acquire();
    let second: (() => void) | undefined;
    const waiting = capacity.acquire().then((release) => (second = release));
    await Promise.resolve();
    expect(second).toBeUndefined();
    expect(capacity.inUse).toBe(1);
    first();
    await waiting;
    expect(second).toBeDefined();
    expect(capacity.inUse).toBe(1);
  });

  it('stops waiting when its caller is interrupted, without taking or losing a slot', async () => {
    // A worker told to stop while it holds no slots (the store that grants them is away) must not wait for them.
    const capacity = new EndpointCapacity(0);
    const stop = new AbortController();
    const waiting = capacity.acquire(stop.signal);
    stop.abort(new Error('shutdown'));
    await expect(waiting).rejects.toThrow('shutdown');
    expect(capacity.inUse).toBe(0);
    // The interrupted caller left the queue: a slot granted later goes to the next caller, not to it.
    const next = capacity.acquire();
    capacity.setLimit(1);
    const release = await next;
    expect(capacity.inUse).toBe(1);
    release();
    expect(capacity.inUse).toBe(0);
  });

  it('refuses at once a caller already interrupted', async () => {
    const capacity = new EndpointCapacity(4);
    const stop = new AbortController();
    stop.abort(new Error('cancelled'));
    await expect(capacity.acquire(stop.signal)).rejects.toThrow('cancelled');
    expect(capacity.inUse).toBe(0);
  });
});
