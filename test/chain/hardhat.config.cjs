// The in-process chain of the payment tests: Hardhat's simulated network with Base's chain id (8453),
// so the service's production x402 terms (eip155:8453, Base USDC) run unchanged against it.
module.exports = {
  networks: {
    hardhat: { chainId: 8453, hardfork: 'cancun', mining: { auto: true } },
  },
};
