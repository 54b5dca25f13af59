import { MemoryStore } from '../../src/store/memory/index.js';
import { describeStoreContract, type StoreFactory } from './contract.js';
import { describeEventStoreContract } from './events-contract.js';

const factory: StoreFactory = async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
};

describeStoreContract('MemoryStore', factory);
describeEventStoreContract('MemoryStore', factory);
