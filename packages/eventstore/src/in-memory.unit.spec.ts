import { eventStoreContract, multiStreamAppendContract, uniquenessContract } from './contract.ts';
import { contractUniquenessRules } from './testing/claims-fixture.ts';
import { InMemoryEventStore } from './testing/in-memory.ts';

// The store command handlers' unit specs run against behaves as the real adapters do.
eventStoreContract('in-memory', {
  async createStore() {
    return new InMemoryEventStore();
  },
  async cleanup() {},
});

// One append is one step: no crash between a claim and its append to repair.
uniquenessContract('in-memory', {
  async createStore() {
    return new InMemoryEventStore({ uniqueness: contractUniquenessRules });
  },
  async cleanup() {},
});

multiStreamAppendContract('in-memory', {
  async createStore() {
    return new InMemoryEventStore({ uniqueness: contractUniquenessRules });
  },
  async cleanup() {},
});
