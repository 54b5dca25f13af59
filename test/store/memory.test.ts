import { MemoryStore } from '../../src/store/memory/index.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('MemoryStore', async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
});
